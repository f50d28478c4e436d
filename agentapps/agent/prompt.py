"""The system prompt (agentapps.agent.system_prompt) and the first user message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentapps.agent.discovery import Discovered
from agentapps.agent.system_prompt import compose

INPUT_KEYS = ("input",)


def render_system_prompt(*, task: str, skill: str, discovered: Discovered,
                         returns: Mapping[str, Any] | None, persistent: bool, max_steps: float,
                         has_args: bool = False, files: Mapping[str, Any] | None = None,
                         wraps: str | None = None) -> str:
    """The system prompt: the task, the documented skills, the returns contract, the limits."""
    return compose(
        task=task.strip(), skill=skill, mode=discovered.mode, tools=discovered.tools,
        middleware=discovered.middleware, context=discovered.context,
        returns=json.dumps(returns, indent=2) if returns else None,
        persistent=persistent, max_steps=None if max_steps == float("inf") else int(max_steps),
        has_args=has_args, files=files, wraps=wraps)


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
