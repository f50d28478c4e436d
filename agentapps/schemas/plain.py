"""Plain JSON Schemas (the keywords most skills use) checked without importing jsonschema.

Only a closed set of keywords is understood. `supports()` says no to anything else, and to any
schema that is not well formed; the caller (schemas/validation.py) then uses jsonschema, which
stays the reference.

What this buys: a run whose skills declare plain params never imports jsonschema. That import
costs 108-113 ms, and the first validator built costs 15-19 ms more (measured 2026-11-27, Python
3.11.7, 2 shared cores, load average about 3). That is more than the whole cold-start budget of
`agentapps run hello`, which is 6x `python -c pass` (15 ms there), about 90 ms.
Pinned by tests/test_architecture.py::test_a_skill_with_plain_params_and_returns_runs_without_jsonschema
(it fails when a plain schema makes a run import jsonschema) and by the differential test
tests/schemas/test_plain.py::test_verdicts_match_jsonschema (same verdicts as jsonschema).
"""

from __future__ import annotations

from typing import Any

from agentapps.tools.patterns import pattern_problem, search

TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "$schema", "deprecated",
                         "readOnly", "writeOnly", "format"})
NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
COUNTS = ("minLength", "maxLength", "minItems", "maxItems")
KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum", "const",
                      "pattern", *NUMERIC, *COUNTS}) | ANNOTATIONS
# Every keyword of draft 2020-12 (and the older `definitions`/`dependencies`): one of these that the
# fast path does not implement sends the schema to jsonschema. Anything else is not JSON Schema at all
# and, as the draft says, is ignored (`agentapps check` warns about it: it is usually a typo).
SCHEMA_KEYWORDS = KEYWORDS | frozenset({
    "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$defs", "definitions",
    "prefixItems", "contains", "patternProperties", "dependentSchemas", "propertyNames", "if", "then", "else",
    "allOf", "anyOf", "oneOf", "not", "unevaluatedItems", "unevaluatedProperties", "multipleOf",
    "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "dependentRequired",
    "dependencies", "contentEncoding", "contentMediaType", "contentSchema",
})


def unknown_keywords(schema: Any, path: str = "", depth: int = 0) -> list[str]:
    """Where `schema` uses keys that are not JSON Schema keywords (`properties` names aside)."""
    if not isinstance(schema, dict) or depth > 32:
        return []
    found = [f"{path}/{key}" for key in schema if isinstance(key, str) and key not in SCHEMA_KEYWORDS]
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas") and isinstance(value, dict):
            for name, sub in value.items():
                found += unknown_keywords(sub, f"{path}/{key}/{name}", depth + 1)
        elif key in ("items", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "not",
                     "unevaluatedItems", "unevaluatedProperties", "contentSchema"):
            found += unknown_keywords(value, f"{path}/{key}", depth + 1)
        elif key in ("allOf", "anyOf", "oneOf", "prefixItems") and isinstance(value, list):
            for i, sub in enumerate(value):
                found += unknown_keywords(sub, f"{path}/{key}/{i}", depth + 1)
    return found


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def supports(schema: Any, depth: int = 0) -> bool:
    """True when `schema` uses only keywords this module implements, each in a well-formed way."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > 32:
        return False
    if any(key not in KEYWORDS and key in SCHEMA_KEYWORDS for key in schema):  # a keyword we do not implement
        return False
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if not all(isinstance(k, str) and k in TYPES for k in kinds) or (isinstance(kind, list) and not kind):
        return False
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(supports(p, depth + 1) for p in props.values()):
        return False
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return False
    for key in ("additionalProperties", "items"):
        if key in schema and not supports(schema[key], depth + 1):
            return False
    if "enum" in schema and not isinstance(schema["enum"], list):
        return False
    if any(k in schema and not is_number(schema[k]) for k in NUMERIC):
        return False
    if any(k in schema and not (isinstance(schema[k], int) and not isinstance(schema[k], bool) and schema[k] >= 0)
           for k in COUNTS):
        return False
    # patterns are matched by RE2 (linear time); one it refuses goes to jsonschema's path, which reports it
    if "pattern" not in schema:
        return True
    return isinstance(schema["pattern"], str) and pattern_problem(schema["pattern"]) is None


BOUNDS = (("minimum", "less than the minimum of"), ("maximum", "greater than the maximum of"),
          ("exclusiveMinimum", "less than or equal to the minimum of"),
          ("exclusiveMaximum", "greater than or equal to the maximum of"))


def out_of_bounds(key: str, value: float, bound: float) -> bool:
    if key == "minimum":
        return value < bound
    if key == "maximum":
        return value > bound
    if key == "exclusiveMinimum":
        return value <= bound
    return value >= bound


def type_ok(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":  # an int is one however large (float() of 10**400 would overflow)
        return is_number(value) and (isinstance(value, int) or float(value).is_integer())
    if kind == "number":
        return is_number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    return value is None


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) or (is_number(a) and is_number(b)) if a == b else False


def _type_only(schema: Any) -> bool:
    """A schema that constrains nothing but `type` (annotations aside)."""
    return (isinstance(schema, dict) and "type" in schema
            and all(k == "type" or k in ANNOTATIONS or k not in SCHEMA_KEYWORDS for k in schema))


def errors(value: Any, schema: Any, path: str = "") -> list[str]:
    """Messages for every violation (empty when valid). Call only when `supports(schema)`."""
    where = f"'{path}': " if path else ""
    if schema is True:
        return []
    if schema is False:
        return [f"{where}{value!r} is not allowed"]
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(type_ok(value, k) for k in kinds):
            return [f"{where}{value!r} is not of type {' or '.join(repr(k) for k in kinds)}"]
    found: list[str] = []
    if "enum" in schema and not any(json_equal(value, e) for e in schema["enum"]):
        found.append(f"{where}{value!r} is not one of {schema['enum']!r}")
    if "const" in schema and not json_equal(value, schema["const"]):
        found.append(f"{where}{schema['const']!r} was expected")
    if is_number(value):
        for key, text in BOUNDS:
            if key in schema and out_of_bounds(key, value, schema[key]):
                found.append(f"{where}{value!r} is {text} {schema[key]!r}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            found.append(f"{where}{value!r} is too short")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            found.append(f"{where}{value!r} is too long")
        if "pattern" in schema and not search(schema["pattern"], value):
            found.append(f"{where}{value!r} does not match {schema['pattern']!r}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            found.append(f"{where}{value!r} should be non-empty" if schema["minItems"] == 1 else f"{where}too few items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            found.append(f"{where}too many items")
        if "items" in schema:
            items = schema["items"]
            if _type_only(items):  # the common `items: {type: object}`: no recursion per item
                kinds = items["type"] if isinstance(items["type"], list) else [items["type"]]
                bad = [i for i, item in enumerate(value) if not any(type_ok(item, k) for k in kinds)]
            else:
                bad = list(range(len(value)))
            for i in bad:
                found += errors(value[i], items, f"{path}/{i}" if path else str(i))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                found.append(f"'{name}' is required")
        extra = [k for k in value if k not in props]
        for key, item in value.items():
            sub = f"{path}/{key}" if path else key
            if key in props:
                found += errors(item, props[key], sub)
            elif "additionalProperties" in schema and schema["additionalProperties"] is not False:
                found += errors(item, schema["additionalProperties"], sub)
        if schema.get("additionalProperties") is False and extra:
            names = ", ".join(repr(k) for k in extra)
            verb = "is" if len(extra) == 1 else "are"
            found.append(f"Additional properties are not allowed ({names} {verb} not accepted)")
    return found
