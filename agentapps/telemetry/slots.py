"""Tracing's state in a run's internals (see `agentapps.core.slots`).

`TRACING` is the process's tracer, started the first time a call reads it: None (and nothing
imported) unless the `OTEL_*` variables configure traces. `TRACEPARENT` is the W3C `traceparent`
a server's request carried (its run's spans join that trace), `RUN_ID` the id a server gave the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.slots import Slot
from agentapps.telemetry.setup import start

if TYPE_CHECKING:
    from agentapps.telemetry.spans import Tracing

TRACING: Slot[Tracing | None] = Slot("telemetry.tracing", start)
TRACEPARENT: Slot[str | None] = Slot("telemetry.traceparent", lambda: None, per_run=True)
RUN_ID: Slot[str | None] = Slot("telemetry.run_id", lambda: None, per_run=True)
