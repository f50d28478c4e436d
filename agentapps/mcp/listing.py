"""Listing a server's tools from synchronous code (name resolution, `agentapps list`): the server
is started just to list them, then stopped; its list is cached, so this happens once per config."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError, LimitError
from agentapps.mcp.connection import Connection

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.mcp.config import ServerSpec


async def _list_once(spec: ServerSpec, g: Globals) -> list[dict[str, Any]]:
    found: list[list[dict[str, Any]]] = []
    conn = Connection(spec, g, found.append)
    try:
        await conn.start()
    finally:
        await conn.close()
    return found[0]


def list_now(spec: ServerSpec, g: Globals) -> list[dict[str, Any]]:
    """The server's tools, started and stopped here: in this thread when no event loop runs in it,
    else in a helper thread (the running loop waits; this happens once per server config)."""
    report = g.internals.reporter
    if callable(report):
        report("mcp-start", {"server": spec.name, "purpose": "list"})
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_list_once(spec, g))
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["tools"] = asyncio.run(_list_once(spec, g))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=work, name=f"mcp-list-{spec.prefix}", daemon=True)
    thread.start()
    thread.join(spec.start_timeout + 5)
    if "error" in box:
        error = box["error"]
        raise error if isinstance(error, AgentAppsError) else LimitError(f"Listing MCP server '{spec.name}' failed: {error}")
    if "tools" not in box:
        raise LimitError(f"MCP server '{spec.name}' did not list its tools within {spec.start_timeout:g} s.")
    return box["tools"]  # type: ignore[no-any-return]
