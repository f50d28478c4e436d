"""The live MCP connections of a process: on the loop that started them, each server started once
(restarted once after a crash or hang), all of them stopped when the run ends."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.core.cleanup import register
from agentapps.errors import SkillError
from agentapps.mcp.connection import Connection
from agentapps.mcp.stdio import kill_group

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.mcp.config import ServerSpec

MAX_FAILURES = 2  # the first failure allows one restart; the second is final for this run


@dataclass
class Hub:
    """The MCP client connections of one process, started on first use."""

    g: Globals
    loop: asyncio.AbstractEventLoop | None = None
    connections: dict[str, Connection] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def _bind(self) -> None:
        """Connections live on one loop; a new loop (a new asyncio.run) starts afresh."""
        loop = asyncio.get_running_loop()
        if loop is self.loop:
            return
        for conn in self.connections.values():  # their loop is gone: nothing can close them politely
            if conn.info.pid is not None:
                kill_group(conn.info.pid)
        self.connections.clear()
        self.locks.clear()
        self.loop = loop
        register(self.g.internals, self.close)

    async def connection(self, spec: ServerSpec, on_tools: Any) -> Connection:
        self._bind()
        conn = self.connections.get(spec.prefix)
        if conn is not None and conn.alive:
            return conn
        async with self.locks.setdefault(spec.prefix, asyncio.Lock()):
            conn = self.connections.get(spec.prefix)
            if conn is not None and conn.alive:
                return conn
            if conn is not None:  # it crashed, hung, or broke the protocol
                await conn.close()  # first: a server that exited between calls has its exit code then
                self.failed(spec, conn.why_gone())
            failed = self.failures.get(spec.prefix, [])
            if len(failed) >= MAX_FAILURES:
                again = "no new session is opened" if spec.url else "it is not started again"
                raise SkillError(f"MCP server '{spec.name}' failed {len(failed)} times in this run (last: "
                                 f"{failed[-1]}); {again}.", skill=spec.declared_by)
            report = self.g.internals.reporter
            if callable(report):
                report("mcp-start", {"server": spec.name, "purpose": "call", "restart": bool(failed)})
            conn = Connection(spec, self.g, on_tools)
            self.connections[spec.prefix] = conn
            try:
                await conn.start()
            except BaseException as exc:
                self.connections.pop(spec.prefix, None)
                self.failed(spec, str(exc))
                raise
            return conn

    def failed(self, spec: ServerSpec, why: str) -> None:
        self.failures.setdefault(spec.prefix, []).append(why[:300])

    async def close(self) -> None:
        conns = list(self.connections.values())
        self.connections.clear()
        if conns:
            await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
