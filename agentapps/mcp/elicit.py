"""Elicitation: a server asks for input mid-call. The question goes where a trust prompt would:
to the MCP client when agentapps is itself serving one (`FORWARD`), else to the terminal, else
it is declined."""

from __future__ import annotations

import asyncio
import json
import os
import select
import sys
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Literal

Answer = tuple[Literal["accept", "decline", "cancel"], dict[str, Any] | None]
Forward = Callable[[str, str, dict[str, Any]], Awaitable[Answer]]
# Set by `agentapps mcp-server` for each call it serves: questions go back to its own client.
FORWARD: ContextVar[Forward | None] = ContextVar("agentapps_mcp_forward", default=None)


MAX_SHOWN = 500  # characters of a server's question shown: a longer one could push its own name off screen


def safe(text: Any, limit: int = MAX_SHOWN) -> str:
    """Server text as the terminal should show it: control and format characters escaped, and at
    most `limit` characters of it (a fake prompt cannot hide after a screenful of padding)."""
    from agentapps.core.terminal import escape

    text = str(text)
    shown = escape(text[:limit].replace("\n", "\\u000a"), strict=True)  # one line per question
    return shown + (f"... ({len(text) - limit} more characters not shown)" if len(text) > limit else "")


def interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")


def _timeout() -> float:
    try:
        return float(os.environ.get("AGENTAPPS_TRUST_TIMEOUT", "60"))
    except ValueError:
        return 60.0


def _line(prompt: str, timeout: float) -> str | None:
    from agentapps.core.terminal import flush_input

    flush_input(sys.stdin)  # typed-ahead text answers no question; one typed after it shows does
    sys.stderr.write(prompt)
    sys.stderr.flush()
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if not ready:
        sys.stderr.write("\n")
        return None
    line = sys.stdin.readline()
    return None if line == "" else line.strip()


def _coerce(text: str, prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    if kind == "boolean":
        return text.lower() in ("y", "yes", "true", "1")
    if kind in ("number", "integer"):
        value = json.loads(text)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(text)
        return int(value) if kind == "integer" else value
    if prop.get("enum") and text not in [str(e) for e in prop["enum"]]:
        raise ValueError(text)
    return text


def ask_terminal(server: str, message: str, schema: dict[str, Any], timeout: float) -> Answer:
    """One prompt per field of the (flat) requested schema; no answer in time cancels."""
    answer = _line(f"MCP server '{safe(server)}' asks: {safe(message)}\nAnswer? [y/N] ({int(timeout)}s): ", timeout)
    if answer is None:
        return "cancel", None
    if answer.lower() not in ("y", "yes"):
        return "decline", None
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    content: dict[str, Any] = {}
    for key, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        label = safe(prop.get("title") or key, 100)
        hint = "/".join([safe(e, 100) for e in prop["enum"][:20]] + (["..."] if len(prop["enum"]) > 20 else [])) \
            if prop.get("enum") else safe(prop.get("type") or "text", 100)
        while True:
            text = _line(f"  {label} ({hint}): ", timeout)
            if text is None:
                return "cancel", None
            if not text and key not in required:
                break
            try:
                content[key] = _coerce(text, prop)
                break
            except ValueError:
                sys.stderr.write(f"  not a valid {hint}; try again\n")
    return "accept", content


async def ask(server: str, message: str, schema: Any, forward: Forward | None) -> Answer:
    shape: dict[str, Any] = schema.model_dump(by_alias=True, exclude_none=True) if hasattr(schema, "model_dump") \
        else dict(schema or {})
    if forward is not None:
        return await forward(server, message, shape)
    if not interactive():
        return "decline", None
    return await asyncio.to_thread(ask_terminal, server, message, shape, _timeout())
