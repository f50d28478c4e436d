"""What the handlers of `agentapps serve` share: options, the offered skills, the coordinator, the
runs this process holds, and how many runs each client has going."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError
from agentapps.serve.coord import Answer

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.mcp.exposed import Exposure
    from agentapps.runlog.batch import Batcher
    from agentapps.serve.coord import Coordinator, Signal
    from agentapps.serve.deadlines import Deadlines
    from agentapps.serve.runs import LiveRun
    from agentapps.types import ToolDef

log = logging.getLogger("agentapps.serve")
MAX_BODY = 1024 * 1024


def identity(token: str) -> str:
    """Who a bearer token is, without keeping the token: owners of streams and threads are these."""
    return "token-" + hashlib.sha256(token.encode()).hexdigest()[:12]


@dataclass
class Options:
    """The options of `agentapps serve`."""

    host: str = "127.0.0.1"
    port: int = 8000
    tokens: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    timeout: float = 300.0  # seconds one run may take
    concurrency: int = 8  # runs one client may have going at once
    queue: int = 64  # requests of one client that may wait for a slot before the next is refused (429)
    heartbeat: float = 15.0  # seconds between SSE keep-alive comments
    max_body: int = MAX_BODY

    @property
    def loopback(self) -> bool:
        from agentapps.net.gate import bound_to_loopback

        return bound_to_loopback(self.host)


@dataclass
class Server:
    """The state of a running serve process: globals, exposure, coordination, options and live runs."""

    g: Globals
    exposure: Exposure
    coord: Coordinator
    options: Options
    live: dict[str, LiveRun] = field(default_factory=dict)  # the runs this process holds, by id
    busy: Counter[str] = field(default_factory=Counter)  # runs going, by client identity
    waiting: dict[str, deque[asyncio.Future[None]]] = field(default_factory=dict)  # requests waiting, by client
    background: set[asyncio.Task[Any]] = field(default_factory=set)
    _run_log: list[Batcher | None] = field(default_factory=list, repr=False)  # run_log()'s, once known
    _deadlines: Deadlines | None = field(default=None, repr=False)

    def deadlines(self, loop: asyncio.AbstractEventLoop) -> Deadlines:
        """The time limit (`--timeout`) of the runs going on `loop`: one timer for all of them."""
        found = self._deadlines
        if found is None or found.loop is not loop:
            from agentapps.serve.deadlines import Deadlines

            found = self._deadlines = Deadlines(self.options.timeout, loop)
        return found

    def run_log(self) -> Batcher | None:
        """The run log's batched writer, None when the log is off: looked up once, not per run
        (the server's environment, `AGENTAPPS_RUN_LOG`, is read when its first run ends)."""
        if not self._run_log:
            from agentapps.runlog import enabled
            from agentapps.runlog.batch import batcher_for

            self._run_log.append(batcher_for(self.g.internals, self.g.config.log_dir) if enabled() else None)
        return self._run_log[0]

    def deliver(self, signal: Signal) -> Answer | None:
        """A decision, cancellation or message for a stream; ignored (None) unless this process holds
        it. A message's answer goes back to the replica the client asked."""
        run = self.live.get(signal.get("stream", ""))
        if run is None:
            return None
        kind = signal.get("kind")
        if kind == "decision":
            run.resolve(signal.get("approval", ""), signal.get("decision", "deny"))
        elif kind == "cancel":
            run.cancel("Cancelled by the client.")
        elif kind in ("steer", "follow-up"):
            from agentapps.agent.steering import checked_message
            from agentapps.errors import UsageError

            try:  # as the replica that relayed it checked it (anyone who can publish could send it)
                text = checked_message(kind, signal.get("text"))
            except UsageError as exc:
                return Answer(400, exc.message)
            return run.take(kind, text)
        return None

    def tool(self, name: str) -> ToolDef | None:
        """The offered skill `name` (None when it is not offered: hidden, middleware, bundled...)."""
        if name not in self.exposure.offers:
            try:
                self.exposure.refresh()  # a skill added since the last look
            except AgentAppsError:
                return None
        if name not in self.exposure.offers:
            return None
        return self.g.lookup.find(name)

    def keep(self, task: asyncio.Task[Any]) -> None:
        self.background.add(task)
        task.add_done_callback(self.background.discard)
