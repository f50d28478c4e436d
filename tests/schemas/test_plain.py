"""The plain-schema fast path gives the same verdicts as jsonschema (differential, with hypothesis)."""

from __future__ import annotations

import timeit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentapps.schemas.plain import errors, supports
from agentapps.schemas.plain_check import compile_check

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": False},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 10}}},
    {"type": "object", "properties": {"r": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}}},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "minLength": 1},
                                                "minItems": 1, "maxItems": 3}}},
    {"type": "object", "properties": {"level": {"enum": ["low", "mid", 1, True, None]}}},
    {"type": "object", "properties": {"v": {"type": ["string", "null"], "pattern": "^a"}}},
    {"type": "object", "additionalProperties": {"type": "boolean"}},
    {"type": "object", "properties": {"c": {"const": {"a": [1, 2.0]}}}},
    {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
    {"type": "string", "maxLength": 3},
    {"type": "integer"},
    {"type": "object", "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 3},
                                      "value": {"description": "any"}, "n": {"type": ["integer", "null"]},
                                      "store": {"type": "string", "enum": ["a", "abc"]}},
     "required": ["key", "value"], "additionalProperties": False},
    {"type": ["object", "null"], "properties": {"ok": {"const": True}, "name": {"type": "string"}}},
    {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": ["number", "string"], "maximum": 5}},
    {},
    True,
    False,
]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-20, 20) | st.floats(-20, 20, allow_nan=False) | st.text(max_size=5)
    | st.sampled_from(["low", "mid", "a", "abc", "name", 1.0, 2.0]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["name", "n", "r", "tags", "level", "v", "c", "x", "other"]), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_plain_schemas_are_supported(schema):
    assert supports(schema)


@pytest.mark.parametrize(
    "schema",
    [{"anyOf": [{"type": "string"}]}, {"$ref": "#/x"}, {"type": "strin"}, {"type": []}, {"required": "name"},
     {"properties": {"a": {"oneOf": []}}}, {"minLength": -1}, {"pattern": "("}, {"minimum": "1"},
     {"patternProperties": {}}, {"items": [{"type": "string"}]}],
)
def test_anything_else_falls_back_to_jsonschema(schema):
    assert not supports(schema)


@settings(max_examples=400, deadline=None)
@given(index=st.integers(0, len(SCHEMAS) - 1), value=JSON)
def test_verdicts_match_jsonschema(index, value):
    schema = SCHEMAS[index]
    expected = Draft202012Validator(schema).is_valid(value)
    assert (errors(value, schema) == []) == expected
    assert compile_check(schema)(value) is expected  # the compiled yes/no check of the same schema


def test_messages_name_the_problem():
    schema = SCHEMAS[0]
    assert errors({}, schema) == ["'name' is required"]
    assert errors({"name": "a", "nam": 1}, schema) == ["Additional properties are not allowed ('nam' is not accepted)"]
    assert errors({"n": 0}, SCHEMAS[1]) == ["'n': 0 is less than the minimum of 1"]
    assert errors({"n": True}, SCHEMAS[1]) == ["'n': True is not of type 'integer'"]


@pytest.mark.parametrize(("pattern", "text", "matches"), [
    ("^abc$", "abc", True),
    ("^abc$", "abc\n", False),  # ECMA-262 and RE2: `$` is the very end (Python's re would match)
    ("^\\d+$", "123", True),
    ("^\\d+$", "\u0663", False),  # `\d` is ASCII (Python's re matches an Arabic-Indic digit)
    ("^\\u00e9$", "é", True),  # an ECMA-262 escape RE2 spells \x{e9}
    ("(a|aa)*$", "a" * 5000 + "!", True),  # linear time: would take forever in a backtracking engine
])
def test_patterns_follow_ecma_262_on_both_paths(pattern, text, matches):
    from agentapps.schemas.validation import validator_for

    schema = {"type": "string", "pattern": pattern}
    assert supports(schema)
    assert (errors(text, schema) == []) is matches
    slow = validator_for({"allOf": [schema]}, {}, skill="t", where="params")
    assert slow.is_valid(text) is matches


@pytest.mark.parametrize("pattern", ["(?=a)", "(?<=a)b", "(a)\\1", "a{1001}"])
def test_patterns_re2_cannot_run_leave_the_fast_path(pattern):
    assert not supports({"type": "string", "pattern": pattern})


def test_keywords_that_are_not_json_schema_are_ignored_on_the_fast_path():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimun": 1, "x-ui": "slider"}}}
    assert supports(schema)  # no jsonschema import for an annotation or a typo (draft 2020-12 ignores them)
    assert errors({"n": 0}, schema) == [] and errors({"n": "x"}, schema) != []
    assert compile_check(schema)({"n": 0}) and not compile_check(schema)({"n": "x"})
    assert not supports({"type": "object", "oneOf": [{"required": ["a"]}]})  # a keyword it does not implement


def test_an_integer_too_large_for_a_float_is_judged_not_crashed_on():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}}
    assert errors({"n": 10**400}, schema) == [f"'n': {10**400!r} is greater than the maximum of 5"]
    assert errors(10**400, {"type": "integer"}) == []
    assert compile_check(schema)({"n": 10**400}) is False and compile_check({"type": "integer"})(10**400) is True


def test_the_compiled_check_passes_a_call_much_faster_than_building_messages():
    """schemas/plain_check.py pays only while it beats `errors() == []` on a passing call (measured 8x)."""
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}  # benchmarks/invoke_overhead.py's
    check = compile_check(schema)
    value = {"x": 5}
    fast = min(timeit.repeat(lambda: check(value), number=2000, repeat=7))
    slow = min(timeit.repeat(lambda: errors(value, schema) == [], number=2000, repeat=7))
    assert slow / fast >= 2.0


def test_a_long_refused_value_is_quoted_cut_short(project):
    # a 5,000-character argument used to come back as a 5,000-character error line
    result = project.cli("run", "state-set", "--key", "A" * 5000, "--value", "1")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    said = line.partition("Invalid arguments for skill 'state-set': ")[2]  # the checkout's path varies
    assert line.startswith("error: ") and said.startswith("'key'") and len(said) <= 301 and "…" in said  # and the full stop
