"""The MCP client's state in a run's internals (see `agentapps.core.slots`): the process's, shared
by every run a server serves (one connection per server for the whole process)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.slots import Slot

if TYPE_CHECKING:
    from asyncio.subprocess import Process

    from agentapps.mcp.hub import Hub
    from agentapps.mcp.registry import Registry

MCP_HUB: Slot[Hub | None] = Slot("mcp.hub", lambda: None)  # the sessions, made on the first call
MCP_REGISTRY: Slot[Registry | None] = Slot("mcp.registry", lambda: None)  # the declared servers
MCP_EARLY: Slot[dict[str, Process]] = Slot("mcp.early", dict)  # servers started ahead of their session
