"""JSON Schema (2020-12) for params and returns: size limits first, cached validators, no remote $ref.

Every `pattern` (and `patternProperties` key) is matched by RE2 in linear time (tools/patterns.py),
on the fast path and in jsonschema alike; a pattern RE2 refuses is a configuration error. `format`
is an annotation only (never validated), so `format: regex` runs nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path as FilePath
from typing import Any

from agentapps.errors import AgentAppsError, ArgsError, ConfigError
from agentapps.schemas.plain import errors, supports
from agentapps.schemas.plain_check import compile_check
from agentapps.tools.patterns import pattern_problem, search

# One limit for the args a run starts with, whichever door they come through (argv, --args-file,
# stdin, serve, mcp-server, a worker's event): 1 MiB of JSON, 64 levels, and one string may use the
# whole 1 MiB (a piped diff). A call one skill makes of another (agent code's above all) keeps its
# strings to MAX_STRING characters (context/admission.py).
MAX_ARGS_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_STRING = 64_000
# compiled schemas a cache keeps: each entry holds its schema (so a recycled id() never matches
# another), and schemas made per run (a callback ref's params, a `returns` passed in args) would
# otherwise pile up in a long-lived process; the oldest go first
MAX_CACHED_SCHEMAS = 1024


def check_limits(args: Any, *, skill: str, max_string: int = MAX_ARGS_BYTES) -> None:
    """Refuse non-JSON, oversized or over-deep args before any schema work runs: by default as any
    door admits a run's own args; a call between skills passes `max_string=MAX_STRING`."""
    if not within_limits(args, max_string):  # the common call: a few scalars, far below every limit
        walk_limits(args, skill, max_string)


def walk_limits(args: Any, skill: str, max_string: int) -> None:
    """`check_limits` for args `within_limits` did not pass at once: every member is walked."""
    # a lower bound of the JSON size; exact serialisation only when it gets close
    if _estimate(args, 0, skill, max_string) > MAX_ARGS_BYTES // 2:
        size = len(json.dumps(args))
        if size > MAX_ARGS_BYTES:
            raise ArgsError(f"Arguments for '{skill}' are {size} bytes of JSON; the limit is 1 MiB.", skill=skill)


def _estimate(value: Any, depth: int, skill: str, max_string: int) -> int:
    """A lower bound of `value`'s JSON size, refusing what is not JSON data, too deep or too long."""
    if depth > MAX_DEPTH:
        raise ArgsError(f"Arguments for '{skill}' are nested deeper than {MAX_DEPTH} levels.", skill=skill)
    kind = type(value)
    if kind is dict:  # (exact types first: one test each for what JSON decoding makes)
        return _estimate_object(value, depth, skill, max_string)
    if kind is list:
        return _estimate_array(value, depth, skill, max_string)
    if kind is str or isinstance(value, str):
        if len(value) > max_string >= MAX_ARGS_BYTES:  # a door's limit: the string alone is too much JSON
            raise ArgsError(f"Arguments for '{skill}' are more than {len(value)} bytes of JSON; the limit is "
                            "1 MiB.", skill=skill)
        if len(value) > max_string:
            raise ArgsError(
                f"An argument string for '{skill}' has {len(value)} characters; the limit is {max_string}. "
                "Pass large text as a file path instead.",
                skill=skill,
            )
        return len(value) + 2
    if kind is int or kind is bool or value is None:
        return 4
    if isinstance(value, dict):
        return _estimate_object(value, depth, skill, max_string)
    if isinstance(value, (list, tuple)):
        return _estimate_array(value, depth, skill, max_string)
    if isinstance(value, int):  # bool and int subclasses
        return 4
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ArgsError(f"Arguments for '{skill}' contain {value!r}, which is not a JSON number.", skill=skill)
        return 8
    raise ArgsError(f"Arguments for '{skill}' are not JSON data ({type(value).__name__}).", skill=skill)


# A member that is a short string, an int, a bool, None or a finite float is sized in the loop
# itself: a state-set's value and expect are small objects of such members, and a call per member
# was a fifth of the pipeline's cost of one state-set. Anything else goes through _estimate.
def _estimate_object(value: dict[Any, Any], depth: int, skill: str, max_string: int) -> int:
    if value and depth >= MAX_DEPTH:  # its members would be deeper (as _estimate says of each)
        raise ArgsError(f"Arguments for '{skill}' are nested deeper than {MAX_DEPTH} levels.", skill=skill)
    total = 2
    for key, item in value.items():
        if not isinstance(key, str):
            raise ArgsError(f"Arguments for '{skill}' have a non-string key {key!r}.", skill=skill)
        kind = type(item)
        if kind is str and len(item) <= max_string:
            total += len(key) + 6 + len(item)
        elif kind is int or kind is bool or item is None:
            total += len(key) + 8
        elif kind is float and math.isfinite(item):
            total += len(key) + 12
        elif kind is dict and depth < MAX_DEPTH:
            total += len(key) + 4 + _estimate_object(item, depth + 1, skill, max_string)
        elif kind is list and depth < MAX_DEPTH:
            total += len(key) + 4 + _estimate_array(item, depth + 1, skill, max_string)
        else:
            total += len(key) + 4 + _estimate(item, depth + 1, skill, max_string)
    return total


def _estimate_array(value: list[Any] | tuple[Any, ...], depth: int, skill: str, max_string: int) -> int:
    if value and depth >= MAX_DEPTH:
        raise ArgsError(f"Arguments for '{skill}' are nested deeper than {MAX_DEPTH} levels.", skill=skill)
    total = 2 + len(value)
    for item in value:
        kind = type(item)
        if kind is str and len(item) <= max_string:
            total += len(item) + 2
        elif kind is int or kind is bool or item is None:
            total += 4
        elif kind is float and math.isfinite(item):
            total += 8
        elif kind is dict and depth < MAX_DEPTH:
            total += _estimate_object(item, depth + 1, skill, max_string)
        elif kind is list and depth < MAX_DEPTH:
            total += _estimate_array(item, depth + 1, skill, max_string)
        else:
            total += _estimate(item, depth + 1, skill, max_string)
    return total


def within_limits(args: Any, max_string: int) -> bool:
    """The common call's quick yes: a dict of at most 64 string keys with ints, bools, None and
    strings within the limit, well under 1 MiB in all (anything else takes `check_limits`' walk)."""
    if type(args) is not dict or len(args) > 64:
        return False
    size = 0
    for key, value in args.items():
        if type(key) is not str:
            return False
        size += len(key)
        kind = type(value)
        if kind is str:
            if len(value) > max_string:
                return False
            size += len(value)
        elif not (kind is int or kind is bool or value is None):
            return False
    return size < MAX_ARGS_BYTES // 4


Path = tuple[str | int, ...]


def unusable_patterns(schema: Any, path: Path = ()) -> Iterator[tuple[str, str, Path]]:
    """(pattern, why, path) for every `pattern` or `patternProperties` key that cannot be used."""
    if isinstance(schema, dict):
        candidates: list[tuple[Any, Path]] = [(schema.get("pattern"), (*path, "pattern"))]
        props = schema.get("patternProperties")
        if isinstance(props, dict):
            candidates += [(key, (*path, "patternProperties", key)) for key in props]
        for pattern, where in candidates:
            if isinstance(pattern, str):
                why = pattern_problem(pattern)
                if why is not None:
                    yield pattern, why, where
        for key, value in schema.items():
            yield from unusable_patterns(value, (*path, str(key)))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from unusable_patterns(value, (*path, i))


def _line(file: str | FilePath | None, where: str, path: Sequence[str | int]) -> int | None:
    """The line of `metadata.<where>.<path>` when the file itself writes it (not an inherited schema)."""
    if file is None:
        return None
    from agentapps.tools.locate import KeyLines

    return KeyLines(FilePath(file)).written(["metadata", where, *path])


def _check_patterns(schema: Any, skill: str, where: str, file: str | FilePath | None = None) -> None:
    for pattern, why, path in unusable_patterns(schema):
        raise ConfigError(
            f"Skill '{skill}' {where} schema has a 'pattern' that cannot be matched in linear time "
            f"({pattern[:40]!r}): {why}. Rewrite it with plain RE2 syntax.",
            skill=skill, file=file, line=_line(file, where, path),
        )


@cache
def _validator_class() -> Any:
    """Draft 2020-12 with `pattern` and `patternProperties` matched by RE2 (made once, on first use)."""
    from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, properties: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in properties.items():
            for key, value in instance.items():
                if search(patrn, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    checker = FormatChecker(formats=())  # the metaschema's `format: regex`, checked by RE2 too
    checker.checks("regex")(lambda value: not isinstance(value, str) or pattern_problem(value) is None)
    cls = validators.extend(Draft202012Validator, {"pattern": pattern, "patternProperties": pattern_properties})
    return cls, checker


def validator_for(schema: dict[str, Any], cache: dict[Any, Any], *, skill: str, where: str,
                  file: str | FilePath | None = None) -> Any:
    hit = cache.get(id(schema))
    if hit is not None and hit[0] is schema:  # the schema object itself is kept, so ids cannot be recycled
        return hit[1]
    from jsonschema.exceptions import SchemaError
    from referencing import Registry

    cls, checker = _validator_class()
    _check_patterns(schema, skill, where, file)
    try:
        cls.check_schema(schema, format_checker=checker)
    except SchemaError as exc:
        raise ConfigError(f"Skill '{skill}' has an invalid {where} schema: {exc.message}.", skill=skill,
                          file=file, line=_line(file, where, list(exc.path))) from None
    validator = cls(schema, registry=Registry())  # empty registry: never fetch a $ref
    _keep(cache, id(schema), (schema, validator))
    return validator


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is no JSON Schema this project validates with (a bad keyword value, a pattern RE2
    cannot run), or None when it is one."""
    try:
        validator_for(schema, {}, skill="-", where="-")
    except ConfigError as exc:
        return exc.message.split(" schema: ", 1)[-1].rstrip(".")
    return None


def _keep(cache: dict[Any, Any], key: Any, entry: tuple[dict[str, Any], Any]) -> None:
    while len(cache) >= MAX_CACHED_SCHEMAS:
        del cache[next(iter(cache))]
    cache[key] = entry


MAX_MESSAGE = 300  # characters of one validation message (both validators quote the whole refused value)


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
    error_cls: type[AgentAppsError] = ArgsError, file: str | FilePath | None = None,
) -> None:
    """Refuse `value` unless `schema` admits it; `file` (the skill's) goes on every error."""
    hit = cache.get(("fast", id(schema)))
    if hit is None or hit[0] is not schema:
        # refuses patterns RE2 cannot run: jsonschema's path then reports them
        hit = (schema, compile_check(schema) if supports(schema) else None)
        _keep(cache, ("fast", id(schema)), hit)
    check = hit[1]
    if check is not None:  # plain schema: checked without importing jsonschema (same verdicts, tested)
        if check(value):
            return
        messages = errors(value, schema)
    else:
        validator = validator_for(schema, cache, skill=skill, where=where, file=file)
        try:
            found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        except Exception as exc:  # noqa: BLE001 - a $ref we refuse to fetch, and similar schema-time failures
            raise ConfigError(f"Skill '{skill}' {where} schema cannot be applied: {exc}", skill=skill,
                              file=file) from None
        messages = [describe_error(e) for e in found]
    if messages:
        details = "; ".join(m if len(m) <= MAX_MESSAGE else m[: MAX_MESSAGE - 1] + "…" for m in messages[:3])
        more = f" (+{len(messages) - 3} more)" if len(messages) > 3 else ""
        noun = "arguments" if where == "params" else "result"
        raise error_cls(f"Invalid {noun} for skill '{skill}': {details}{more}.", skill=skill, file=file)


def refused_config(skill: str, middleware: str, exc: AgentAppsError, file: str | FilePath | None = None,
                   line: int | None = None) -> ArgsError:
    """A skill's metadata key configures the middleware of that name, whose params refuse the value."""
    return ArgsError(f"Skill '{skill}' configures middleware '{middleware}' with values it refuses: {exc.message}",
                     skill=skill, file=file, line=line)
