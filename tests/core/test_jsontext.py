"""JSON text from an encoder made once (`agentapps.core.jsontext`): the text json itself gives."""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import pytest

from agentapps.core.jsontext import encoder

VALUES: list[Any] = [
    {}, [], "text", "é\u2028\udcff", 3, -0.0, 1e300, None, True,
    {"b": [1, 2.5, None, False, {"z": "é", "a": ["x", {"k": 1}]}], "a": {"deep": [[[]]]}, "é": "\n\t\""},
    [{"when": 1}, ("a", "tuple")],
]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, "default": str},
    {"ensure_ascii": False, "allow_nan": False, "separators": (",", ":")},
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("value", VALUES)
def test_the_text_is_what_json_gives(options: dict[str, Any], value: Any) -> None:
    assert encoder(**options)(value) == json.JSONEncoder(**options).encode(value)


def test_what_json_refuses_it_refuses_and_the_next_value_still_encodes() -> None:
    strict = encoder(allow_nan=False)
    with pytest.raises(ValueError):
        strict({"x": math.nan})
    with pytest.raises(TypeError):
        strict({"when": datetime.date(2026, 11, 28)})
    assert encoder(default=str)({"when": datetime.date(2026, 11, 28)}) == '{"when": "2026-11-28"}'
    looped: dict[str, Any] = {"a": [1]}
    looped["a"].append(looped)
    with pytest.raises(RecursionError):
        strict(looped)
    shared = [1]
    assert strict({"a": shared, "b": shared, "c": looped["a"][:1]}) == '{"a": [1], "b": [1], "c": [1]}'


def test_the_encoder_made_once_pays_against_json_dumps() -> None:
    """core/jsontext.py reaches into json's C encoder only while that beats `json.dumps` on the small
    objects it encodes per request (measured 2.8x); it goes when this stops holding."""
    import timeit

    encode = encoder(sort_keys=True, separators=(",", ":"))
    value = {"skill": "echo", "args": {"text": "x", "n": 3}, "ok": True}
    fast = min(timeit.repeat(lambda: encode(value), number=5000, repeat=7))
    slow = min(timeit.repeat(lambda: json.dumps(value, sort_keys=True, separators=(",", ":")), number=5000, repeat=7))
    assert slow / fast >= 1.5
