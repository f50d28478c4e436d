"""The agent's state in a run's internals (see `agentapps.core.slots`): all of it per run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.core.slots import Slot

if TYPE_CHECKING:
    from agentapps.agent.script import Cursor, Recorder
    from agentapps.agent.spend import Spend

# usage, cost, turns, steps and stop reason over every agent run of this run (--json, the run log)
AGENT_TOTALS: Slot[dict[str, Any] | None] = Slot("agent.totals", lambda: None, per_run=True)
AGENT_SPEND: Slot[Spend | None] = Slot("agent.spend", lambda: None, per_run=True)  # capped by --max-cost
AGENT_RECORDER: Slot[Recorder | None] = Slot("agent.recorder", lambda: None, per_run=True)  # --record
AGENT_SCRIPTS: Slot[dict[str, Cursor]] = Slot("agent.scripts", dict, per_run=True)  # --replay cursors by path
