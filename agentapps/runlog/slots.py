"""The run log's state in a run's internals (see `agentapps.core.slots`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.core.slots import Slot

if TYPE_CHECKING:
    from agentapps.runlog.batch import Batcher

# the first session a run used: its record's session id
SESSION_KEY: Slot[str | None] = Slot("runlog.session_key", lambda: None, per_run=True)
# usage, cost, turns, steps and stop reason over every agent run of the run (the agent adds to it;
# its record, `run --json` and serve's answers read it)
AGENT_TOTALS: Slot[dict[str, Any] | None] = Slot("runlog.agent_totals", lambda: None, per_run=True)
RUN_LOG: Slot[Batcher | None] = Slot("runlog.batch", lambda: None)  # a server's records, written in batches
