"""One request served as a run by a long-running server (`agentapps mcp-server`, `agentapps serve`,
and each event `agentapps worker` handles).

A server bootstraps once and then serves many runs at a time. Each run gets what `agentapps run`
would get in a process of its own: its own cancellation `Signal`, its own run-start cutoff (skill
code written after the request arrived is never loaded), its own per-run internals (usage, cost,
budget, replay cursors, session key: every slot declared `per_run`, see `Internals.served`), and
approvals asked of whoever sent the request (`trust.ASK`). Everything else — caches, stores, the
redactor, MCP connections, child processes to kill at the end — stays the server's. Progress goes
to the reporter the request set in `REPORT`.
"""

from __future__ import annotations

import os
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from agentapps.boot import BOOTSTRAP
from agentapps.context.admission import refuse_options
from agentapps.context.context import Globals
from agentapps.context.manager import invoke_root, new_context
from agentapps.core.shown import fields_repr
from agentapps.runstate import Reporter
from agentapps.telemetry.slots import RUN_ID, TRACEPARENT
from agentapps.tools.loader import RUN_STARTED

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.tools.policy import Policy

# The progress reporter of the run being served (the server's `internals.reporter` dispatches to it).
REPORT: ContextVar[Reporter | None] = ContextVar("agentapps_served_report", default=None)


def report(type_: str, data: dict[str, Any]) -> None:
    """The server's `internals.reporter`: hands each event to the run it belongs to."""
    sink = REPORT.get()
    if sink is not None:
        sink(type_, data)


def register_secrets(g: Globals) -> None:
    """Redact, from the first byte on, what any skill on the search path declares in `metadata.env`
    (a skill that runs later, a nested one say, could otherwise leak its value before it is prepared)."""
    from agentapps.errors import AgentAppsError
    from agentapps.secrets import register_declared
    from agentapps.tools.index_cache import env_names

    try:
        names = g.lookup.declared_env()  # from the index: no definition is decoded for this
    except AgentAppsError:
        names = set()  # a broken search path is reported when a skill is resolved
    register_declared(g.internals, sorted(names) + list(env_names(g.config.main_tool)))


def prepare_server(g: Globals, approve: list[str], *, detach_stdin: bool = True) -> None:
    """Once, before serving: the server is not one run (each request is), and approvals go to
    clients, never to a terminal the server may have (unless stdin is the transport)."""
    from agentapps.sandbox.pool import keep_warm

    keep_warm()  # each agent run's first snippet finds its sandbox process started
    RUN_STARTED.set(None)
    register_secrets(g)
    g.config.overrides["approve"] = list(approve)
    g.internals.reporter = report
    if detach_stdin:  # trust's terminal check then says: no terminal
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)


class ServedRun:
    """One run inside a long-lived host (serve, worker, MCP server): its globals and root context."""

    FIELDS = ("g", "root", "started")
    __slots__ = FIELDS
    g: Globals  # this run's own: shared caches and lookup, its own signal and per-run internals
    root: Context
    started: float

    def __init__(self, g: Globals, root: Context, started: float | None = None) -> None:
        self.g, self.root = g, root
        self.started = time.perf_counter() if started is None else started

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


def begin(server: Globals, policy: Policy | None = None, *, run_id: str | None = None,
          traceparent: str | None = None) -> ServedRun:
    """A run for one request: `run_id` names it in its trace, whose parent is the W3C `traceparent`
    the request carried (when traces are on: agentapps/telemetry)."""
    mine = server.served()
    mine.internals.remote_caller = True  # a client's call: the project's trust rules apply to it
    mine.internals.set(RUN_ID, run_id)
    mine.internals.set(TRACEPARENT, traceparent)
    root = new_context(BOOTSTRAP, {}, None, mine)
    root.locals.config.update(cwd=str(server.config.cwd),
                              project=str(server.config.project) if server.config.project else None)
    if policy is not None:
        root.policies = (policy,)  # the server's --allowed-tools binds every call, constraints included
    return ServedRun(mine, root)


async def invoke(run: ServedRun, ref: Any, args: dict[str, Any], reason: str = "Cancelled.") -> Any:
    """Run `ref` for this request; a cancellation also aborts the run's signal (threads watch it)."""
    import asyncio  # a server always has its loop; `agentapps run` imports this module without one

    refuse_options(args, "A client")  # a client's args are data: no `$context` seeds from outside
    RUN_STARTED.set(time.time_ns())  # this request is a run: it never loads skill code written during it
    try:
        return await invoke_root(run.root, ref, args)
    except asyncio.CancelledError:
        run.g.signal.abort(reason)
        raise
