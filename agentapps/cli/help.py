"""Help text generated from a skill's params schema (`agentapps run SKILL --help`)."""

from __future__ import annotations

import json
from typing import Any

from agentapps.cli.skillargs import kebab
from agentapps.types import ToolDef

_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"),
           ("minLength", "length >="), ("maxLength", "length <="), ("minItems", "items >="),
           ("maxItems", "items <="), ("pattern", "matching"))


def _type_label(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if "enum" in schema:
        return "{" + ",".join(str(v) for v in schema["enum"]) + "}"
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    if t == "array":
        return f"{_type_label(schema.get('items') or {}) or 'value'}..."
    return str(t) if t else "value"


def skill_help(tool: ToolDef, params: dict[str, Any] | None) -> str:
    from agentapps.tools.task import takes_task

    if takes_task(tool, params):  # a folder skill: its task as text, --input, --task or stdin
        usage = f"{tool.name} [TASK TEXT | --input TEXT | --task TEXT]  (or pipe the task to stdin)"
    else:
        usage = f"{tool.name} [--param value ...]"
    lines = [f"Usage: agentapps run {usage}", ""]
    if tool.description:
        lines += [tool.description, ""]
    if not params:
        lines.append("This skill takes no params.")
    else:
        props: dict[str, Any] = params.get("properties") or {}
        required = set(params.get("required") or [])
        lines.append("Params:")
        for name, schema in props.items():
            schema = schema if isinstance(schema, dict) else {}
            flag = f"--{kebab(name)}"
            label = _type_label(schema)
            if label == "boolean":
                flag = f"--{kebab(name)} / --no-{kebab(name)}"
            else:
                flag = f"{flag} {label.upper() if label.isalpha() else label}"
            notes = []
            if name in required:
                notes.append("required")
            if "default" in schema:
                notes.append(f"default: {json.dumps(schema['default'])}")
            notes += [f"{word} {json.dumps(schema[key])}" for key, word in _BOUNDS if key in schema]
            text = " ".join(part for part in (str(schema.get("description") or ""),
                                              f"[{', '.join(notes)}]" if notes else "") if part)
            lines.append(f"  {flag:<28} {text}".rstrip())
        if params.get("additionalProperties") is not False:
            lines.append("  (other --key value pairs are passed through as strings)")
    lines += ["", "Also: --arg KEY=VALUE, --arg-json JSON; before the skill name: --args-file FILE|-, --json, --dry-run."]
    if tool.path:
        lines.append(f"Defined in {tool.path}")
    return "\n".join(lines) + "\n"
