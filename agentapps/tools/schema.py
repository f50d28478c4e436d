"""JSON Schema (2020-12) for params and returns: size limits first, cached validators, no remote $ref."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from agentapps.errors import AgentAppsError, ArgsError, ConfigError
from agentapps.tools.fastschema import errors, supports

MAX_ARGS_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_STRING = 64_000
MAX_PATTERN = 1000

# A nested quantifier such as (a+)+ or (a*)* backtracks exponentially in Python's re engine.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}]\)\s*[+*{]")


def check_limits(args: Any, *, skill: str, max_string: int = MAX_STRING) -> None:
    """Refuse non-JSON, oversized or over-deep args before any schema work runs."""
    stack: list[tuple[Any, int]] = [(args, 0)]
    estimate = 0  # a lower bound of the JSON size; exact serialisation only when it gets close
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ArgsError(f"Arguments for '{skill}' are nested deeper than {MAX_DEPTH} levels.", skill=skill)
        if isinstance(value, str):
            if len(value) > max_string:
                raise ArgsError(
                    f"An argument string for '{skill}' has {len(value)} characters; the limit is {max_string}. "
                    "Pass large text as a file path instead.",
                    skill=skill,
                )
            estimate += len(value) + 2
        elif isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ArgsError(f"Arguments for '{skill}' have a non-string key {key!r}.", skill=skill)
                estimate += len(key) + 4
                stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            estimate += 2 + len(value)
            stack.extend((v, depth + 1) for v in value)
        elif value is None or isinstance(value, (bool, int)):
            estimate += 4
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ArgsError(f"Arguments for '{skill}' contain {value!r}, which is not a JSON number.", skill=skill)
            estimate += 8
        else:
            raise ArgsError(f"Arguments for '{skill}' are not JSON data ({type(value).__name__}).", skill=skill)
    if estimate > MAX_ARGS_BYTES // 2:
        size = len(json.dumps(args))
        if size > MAX_ARGS_BYTES:
            raise ArgsError(f"Arguments for '{skill}' are {size} bytes of JSON; the limit is 1 MiB.", skill=skill)


def _safe_patterns(schema: Any, skill: str, where: str) -> None:
    if isinstance(schema, dict):
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and (len(pattern) > MAX_PATTERN or _NESTED_QUANTIFIER.search(pattern)):
            raise ConfigError(
                f"Skill '{skill}' {where} schema has a 'pattern' that can backtrack catastrophically "
                f"({pattern[:40]!r}); rewrite it without nested quantifiers.",
                skill=skill,
            )
        for value in schema.values():
            _safe_patterns(value, skill, where)
    elif isinstance(schema, list):
        for value in schema:
            _safe_patterns(value, skill, where)


def validator_for(schema: dict[str, Any], cache: dict[Any, Any], *, skill: str, where: str) -> Any:
    hit = cache.get(id(schema))
    if hit is not None and hit[0] is schema:  # the schema object itself is kept, so ids cannot be recycled
        return hit[1]
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from referencing import Registry

    _safe_patterns(schema, skill, where)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ConfigError(f"Skill '{skill}' has an invalid {where} schema: {exc.message}.", skill=skill) from None
    validator = Draft202012Validator(schema, registry=Registry())  # empty registry: never fetch a $ref
    cache[id(schema)] = (schema, validator)
    return validator


def describe_error(error: Any) -> str:
    message = str(error.message)
    path = "/".join(str(p) for p in error.absolute_path)
    where = f"'{path}'" if path else "arguments"
    if error.validator == "required":
        return message.replace("is a required property", "is required")
    if error.validator == "additionalProperties":
        return message.replace("were unexpected", "are not accepted").replace(
            "was unexpected", "is not accepted"
        )
    return f"{where}: {message}"


def validate(
    value: Any, schema: dict[str, Any], cache: dict[Any, Any], *, skill: str, where: str,
    error_cls: type[AgentAppsError] = ArgsError,
) -> None:
    hit = cache.get(("fast", id(schema)))
    if hit is None or hit[0] is not schema:
        fast = supports(schema)
        if fast:
            _safe_patterns(schema, skill, where)
        hit = cache[("fast", id(schema))] = (schema, fast)
    if hit[1]:  # plain schema: checked without importing jsonschema (same verdicts, tested)
        messages = errors(value, schema)
    else:
        validator = validator_for(schema, cache, skill=skill, where=where)
        try:
            found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        except Exception as exc:  # noqa: BLE001 - a $ref we refuse to fetch, and similar schema-time failures
            raise ConfigError(f"Skill '{skill}' {where} schema cannot be applied: {exc}", skill=skill) from None
        messages = [describe_error(e) for e in found]
    if messages:
        details = "; ".join(messages[:3])
        more = f" (+{len(messages) - 3} more)" if len(messages) > 3 else ""
        noun = "arguments" if where == "params" else "result"
        raise error_cls(f"Invalid {noun} for skill '{skill}': {details}{more}.", skill=skill)
