"""Hook events of one run: kept in `locals.agent.trace`, emitted as agent events, shown live.

Each trace entry is `{type, timestamp (ms), ...fields}` with the seed's trace types (`turn-start`,
`message`, `reasoning`, `tool-call`, `tool-result`, `turn-end`, `error`, `retry`, and ours:
`context-full`, `context-edit`, `fallback`). With an `events` topic the same entry goes to the
event bus under the seed's event name (`event_name`): `turn-start`, `turn-end`, `tool-call`,
`tool-result`, `tool-error` (a tool result with status "error"), `agent-message`,
`agent-error`, and `agent-<type>` for the rest; the run adds `agent-start` and `agent-complete`.
They go to the project's events store: the in-process bus, or Redis Streams with
`stores: {events: redis}` (so event-wait in any process of the project sees them).
A reporter callable in `globals.internals.reporter` (the CLI's progress display, the MCP
server's progress) gets the same names.
With traces on, the same entries make the run's model and tool spans (`telemetry/genai.py`).
Entries are redacted when recorded (declared secrets, see agentapps/secrets.py), so the trace, its
events, the progress display and a session's `$agent` capture never hold a secret the model echoed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agentapps.core.logs import logger

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.runstate import Reporter
    from agentapps.telemetry.genai import AgentSpans

log = logger("agentapps.agent")
MAX_TRACE = 10_000  # a persistent agent must not grow its trace without bound
SAME_NAME = frozenset({"turn-start", "turn-end", "tool-call", "tool-result"})


def event_name(entry: dict[str, Any]) -> str:
    """The event a trace entry is emitted and reported as (the seed's agent event names)."""
    kind = str(entry.get("type") or "unknown")
    if kind == "tool-result" and entry.get("status") == "error":
        return "tool-error"
    return kind if kind in SAME_NAME else f"agent-{kind}"


class Trace:
    """Records, emits and reports the events of one agent run."""

    def __init__(self, g: Globals, entries: list[dict[str, Any]], *, name: str,
                 topic: str | None, root_context_id: str | None, depth: int) -> None:
        self.g = g
        self.entries = entries
        self.name = name
        self.topic = topic
        self.root_context_id = root_context_id
        self.depth = depth  # 0 for the outermost agent run of the process
        reporter = g.internals.reporter
        self.reporter: Reporter | None = reporter if callable(reporter) else None
        self.redactor = g.internals.redactor
        self.spans: AgentSpans | None = None  # the run's model and tool spans, when traces are on

    def record(self, type_: str, *, announce: bool = True, span_cost: float | None = None,
               **fields: Any) -> dict[str, Any]:
        """Add an entry to the trace and, with `announce`, emit and report it (`span_cost`: a
        model call's cost, for its span)."""
        entry: dict[str, Any] = self.redactor.redact_data(
            {"type": type_, "timestamp": int(time.time() * 1000), **fields})
        if self.spans is not None:
            self.spans.on(entry, span_cost)
        if len(self.entries) >= MAX_TRACE:
            del self.entries[: MAX_TRACE // 10]
        self.entries.append(entry)
        if not announce:
            return entry
        self.announce(event_name(entry), entry)
        return entry

    def announce(self, name: str, data: dict[str, Any]) -> None:
        """The one way an agent event goes out: to the events topic (when the run has one) and to
        the reporter (progress displays, serve's stream, the MCP server's progress), the same data."""
        self._emit(name, data)
        self._report(name, data)

    def _emit(self, type_: str, data: dict[str, Any]) -> None:
        if not self.topic:
            return
        try:
            from agentapps.events.select import events_for
        except ImportError:  # the event bus is optional
            return
        # the project's events store (`stores: {events: redis}`), as event-emit and event-wait use
        events_for(self.g).emit(self.topic, type_, {**data, "agent": self.name}, source=self.name,
                                root_context_id=self.root_context_id)

    def _report(self, type_: str, data: dict[str, Any]) -> None:
        if self.reporter is None:
            return
        try:
            self.reporter(type_, {**data, "agent": self.name, "depth": self.depth})
        except Exception:  # a broken display must never break a run
            log.debug("reporter failed", exc_info=True)
            self.reporter = None
