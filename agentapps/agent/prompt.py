"""The system prompt (a Jinja2 template shipped as a file) and the first user message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentapps.agent.discovery import Discovered
from agentapps.errors import ConfigError

INPUT_KEYS = ("input",)


def _template(path: Path, cache: dict[Any, Any]) -> Any:
    """The compiled template, cached (in `globals.cache`) until the file changes."""
    import jinja2  # lazy: only markdown skills pay for it

    try:
        key = (str(path), path.stat().st_mtime_ns)
    except OSError as exc:
        raise ConfigError(f"Cannot read the system prompt template: {exc.strerror}.",
                          file=path) from None
    if key in cache:
        return cache[key]

    env = jinja2.Environment(autoescape=False, keep_trailing_newline=True, trim_blocks=True,
                             lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    try:
        cache[key] = env.from_string(path.read_text(encoding="utf-8"))
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"System prompt template has a syntax error: {exc.message}.",
                          file=path, line=exc.lineno) from None
    return cache[key]


def render_system_prompt(template: Path, cache: dict[Any, Any], *, task: str, skill: str,
                         discovered: Discovered, returns: Mapping[str, Any] | None,
                         persistent: bool, max_steps: float, has_args: bool = False,
                         files: Mapping[str, Any] | None = None, wraps: str | None = None) -> str:
    """Fill the template: the task, the documented skills, the returns contract, the limits."""
    compiled = _template(template, cache)
    import jinja2

    try:
        return str(compiled.render(
            task=task.strip(), skill=skill, mode=discovered.mode, tools=discovered.tools,
            middleware=discovered.middleware, context=discovered.context,
            returns=json.dumps(returns, indent=2) if returns else None,
            persistent=persistent, max_steps=None if max_steps == float("inf") else int(max_steps),
            has_args=has_args, files=files, wraps=wraps,
        )).strip() + "\n"
    except jinja2.TemplateError as exc:
        raise ConfigError(f"System prompt template failed: {exc}.", file=template) from None


def user_message(args: Mapping[str, Any] | None, explicit: str | None = None) -> str:
    """The first user message: `explicit` if given, else the served skill's args as a JSON block,
    with a piped `input` shown as text after it."""
    if explicit:
        return explicit
    args = dict(args or {})
    text = next((args.pop(k) for k in INPUT_KEYS if isinstance(args.get(k), str)), None)
    parts = []
    if args:
        block = json.dumps(args, indent=2, ensure_ascii=False, default=str)
        parts.append(f"Arguments:\n```json\n{block}\n```")
    if text is not None:
        parts.append(f"Input:\n{text}")
    if not parts:
        return "Carry out the task."
    return "\n\n".join(parts + ["Carry out the task with these."])
