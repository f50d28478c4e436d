"""Turning the tokens after the skill ref into args, coerced by the skill's `params` schema."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from agentapps.cli.run_options import LONG_NAMES, SHORT_NAMES
from agentapps.errors import ArgsError, ConfigError
from agentapps.schemas.plain import TYPES
from agentapps.tools.names import close_names

RESERVED = ("arg", "arg-json", "args-file")
# `agentapps run` options: after the skill name they would silently become skill args
RUNNER_OPTIONS = LONG_NAMES - set(RESERVED)
RUNNER_SHORT = SHORT_NAMES


def _misplaced(option: str, skill: str) -> ArgsError:
    return ArgsError(
        f"{option} is an option of 'agentapps run': put it before the skill name "
        f"(agentapps run {option} {skill} ...).",
        skill=skill,
    )


def _camel(name: str) -> str:
    head, *rest = name.split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def kebab(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", name).replace("_", "-").lower()


def property_for(flag: str, properties: dict[str, Any]) -> str | None:
    """Map `--session-id` to `sessionId`, `session_id` or `session-id`, whichever the schema declares."""
    for candidate in (flag, _camel(flag), flag.replace("-", "_")):
        if candidate in properties:
            return candidate
    for prop in properties:
        if kebab(prop) == flag:
            return prop
    return None


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, list):
        return [str(x) for x in t]
    return [str(t)] if t else []


# schema keys that say what a value is even without `type`: such a param's text stays text
# (`properties` or `items` alone say object or array: JSON text is then read as one)
SHAPING = ("enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref", "pattern", "format", "minLength",
           "maxLength")


def _untyped(raw: str) -> Any:
    """A param that says nothing of its type (`{}`, or undeclared on an open schema): a JSON object or
    array given as text is read as that object or array (`--data '{"a":1}'`, as --arg-json would);
    anything else, numbers and booleans included, stays the text given."""
    if raw.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
        if isinstance(value, (dict, list)):
            return value
    return raw


def coerce(raw: str, schema: dict[str, Any], *, skill: str, flag: str) -> Any:
    types = _types(schema)
    unknown = [t for t in types if t not in TYPES]
    if unknown:
        raise ConfigError(
            f"Skill '{skill}' has an invalid params schema: --{flag} has type {unknown[0]!r}, which is not a "
            f"JSON Schema type ({', '.join(sorted(TYPES))}).",
            skill=skill,
        )
    if not types and not any(key in schema for key in SHAPING):
        return _untyped(raw)
    if not types or "string" in types:
        return raw
    for t in types:
        try:
            if t == "integer":
                return int(raw)
            if t == "number":
                number = float(raw) if not raw.lstrip("-").isdigit() else int(raw)
                if not math.isfinite(number):
                    continue  # nan and infinities are not JSON numbers
                return number
            if t == "boolean":
                lowered = raw.lower()
                if lowered in ("true", "yes", "1", "on"):
                    return True
                if lowered in ("false", "no", "0", "off"):
                    return False
                continue
            if t in ("object", "array"):
                value = json.loads(raw)
                if (t == "object") == isinstance(value, dict):
                    return value
            if t == "null" and raw in ("null", ""):
                return None
        except (ValueError, json.JSONDecodeError):
            continue
    expected = " or ".join(types)
    raise ArgsError(f"--{flag} for skill '{skill}' expects {expected}, got {raw!r}.", skill=skill)


def _other_type(text: str, schema: dict[str, Any], types: list[str], skill: str, flag: str) -> bool:
    """Whether `text` is a value of the param's other, non-boolean type."""
    others = [t for t in types if t != "boolean"]
    if not others:
        return False
    try:
        coerce(text, {**schema, "type": others}, skill=skill, flag=flag)
    except ArgsError:
        return False
    return True


def _split_kv(text: str, *, skill: str) -> tuple[str, str]:
    if "=" not in text:
        raise ArgsError(f"--arg expects key=value, got {text!r} (skill '{skill}').", skill=skill)
    key, value = text.split("=", 1)
    return key, value


def parse_skill_args(tokens: list[str], params: dict[str, Any] | None, *, skill: str) -> dict[str, Any]:
    """Parse `--k v`, `--k=v`, `--flag`, `--no-flag`, repeats, `--arg k=v`, `--arg-json JSON`."""
    properties: dict[str, Any] = (params or {}).get("properties") or {}
    closed = params is None or (params or {}).get("additionalProperties") is False
    args: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token in RUNNER_SHORT:
            raise _misplaced(token, skill)
        if not token.startswith("--") or token == "--":
            raise ArgsError(
                f"Unexpected argument {token!r} for skill '{skill}'; give params as --name value "
                f"(see 'agentapps run {skill} --help').",
                skill=skill,
            )
        flag, eq, inline = token[2:].partition("=")
        value: str | None = inline if eq else None
        prop = property_for(flag, properties)
        if prop is None and flag in RESERVED:
            if value is None:
                if i >= len(tokens):
                    raise ArgsError(f"--{flag} needs a value (skill '{skill}').", skill=skill)
                value, i = tokens[i], i + 1
            if flag == "arg-json":
                try:
                    extra = json.loads(value)
                except json.JSONDecodeError as exc:
                    raise ArgsError(f"--arg-json is not valid JSON: {exc.msg} (skill '{skill}').", skill=skill) from None
                if not isinstance(extra, dict):
                    raise ArgsError(f"--arg-json must be a JSON object (skill '{skill}').", skill=skill)
                args.update(extra)
                continue
            key, raw = _split_kv(value, skill=skill)
            tokens = tokens[:i] + [f"--{key}={raw}"] + tokens[i:]
            continue
        negated = False
        if prop is None and flag.startswith("no-"):
            maybe = property_for(flag[3:], properties)
            if maybe is not None and "boolean" in _types(properties[maybe]):
                prop, negated = maybe, True
        if prop is None and flag in RUNNER_OPTIONS:
            raise _misplaced(f"--{flag}", skill)
        if prop is None:
            if closed:
                if not properties:
                    msg = f"Skill '{skill}' takes no arguments (it declares no params), got --{flag}."
                else:
                    close = close_names(flag, [kebab(p) for p in properties])
                    known = ", ".join("--" + kebab(p) for p in properties)
                    hint = f" Did you mean --{close[0]}?" if close else f" Its params: {known}."
                    msg = f"Skill '{skill}' has no param --{flag}.{hint}"
                raise ArgsError(msg, skill=skill)
            prop = flag
        schema: dict[str, Any] = properties.get(prop) or {}
        types = _types(schema)
        if negated:
            args[prop] = False
            continue
        if value is None and "boolean" in types:
            nxt = tokens[i] if i < len(tokens) else None
            if nxt is not None and nxt.lower() in ("true", "false"):
                value, i = nxt, i + 1
            elif nxt is not None and not nxt.startswith("--") and _other_type(nxt, schema, types, skill, flag):
                value, i = nxt, i + 1  # `boolean|integer`: `--replay 10` is the number, `--replay` alone true
            else:
                args[prop] = True
                continue
        if value is None:
            if i >= len(tokens) or (tokens[i].startswith("--") and len(tokens[i]) > 2):
                if not types and not schema:
                    args[prop] = True
                    continue
                raise ArgsError(f"--{flag} needs a value (skill '{skill}').", skill=skill)
            value, i = tokens[i], i + 1
        if "array" in types and not value.lstrip().startswith("["):
            item = coerce(value, schema.get("items") or {}, skill=skill, flag=flag)
            args.setdefault(prop, [])
            if not isinstance(args[prop], list):
                args[prop] = [args[prop]]
            args[prop].append(item)
            continue
        coerced = coerce(value, schema, skill=skill, flag=flag)
        if prop in args and "array" not in types:
            previous = args[prop]
            args[prop] = (previous if isinstance(previous, list) else [previous]) + [coerced]
        else:
            args[prop] = coerced
    return args
