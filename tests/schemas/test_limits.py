"""Args that are not JSON data, too deep or too large are refused before any schema work, each in
one line naming the skill (the flat fast path and the full walk alike)."""

from __future__ import annotations

import pytest

from agentapps.errors import ArgsError
from agentapps.schemas.validation import MAX_ARGS_BYTES, MAX_STRING, check_limits


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(("args", "says"), [
    (nested(66), "Arguments for 's' are nested deeper than 64 levels."),
    ({"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
     "nested deeper than 64 levels"),
    ({1: "x"}, "Arguments for 's' have a non-string key 1."),
    ({"a": {2: "x"}}, "have a non-string key 2"),
    ({"a": {1, 2}}, "Arguments for 's' are not JSON data (set)."),
    ({"a": b"x"}, "are not JSON data (bytes)"),
    ({"n": float("nan")}, "contain nan, which is not a JSON number"),
    ({"n": [float("inf")]}, "contain inf, which is not a JSON number"),
    ({f"k{i}": "x" * 60_000 for i in range(20)}, "bytes of JSON; the limit is 1 MiB"),
    ({"t": "x" * MAX_ARGS_BYTES}, "bytes of JSON; the limit is 1 MiB"),
])
def test_refused_args_say_why_in_one_line(args, says):
    with pytest.raises(ArgsError) as refused:
        check_limits(args, skill="s")
    assert says in refused.value.message and "\n" not in refused.value.message
    assert refused.value.skill == "s"


@pytest.mark.parametrize(("args", "says"), [
    ({"t": "x" * (MAX_STRING + 1)}, f"has {MAX_STRING + 1} characters; the limit is {MAX_STRING}"),
    ({"t": ["x" * (MAX_STRING + 1)]}, "the limit is 64000"),
])
def test_a_call_between_skills_keeps_its_strings_shorter(args, says):
    check_limits(args, skill="s")  # a door admits them
    with pytest.raises(ArgsError) as refused:
        check_limits(args, skill="s", max_string=MAX_STRING)
    assert says in refused.value.message and "\n" not in refused.value.message
    assert refused.value.skill == "s"


def test_the_users_own_args_may_hold_one_long_string_and_json_shaped_values_pass():
    check_limits({"diff": "x" * (MAX_STRING * 4)}, skill="s")
    check_limits({"a": (1, 2.5, True, None), "b": nested(63), "c": [{"d": "e"}]}, skill="s")

    class Count(int):
        pass

    check_limits({"n": Count(3), "s": type("S", (str,), {})("x")}, skill="s")  # subclasses of JSON types
