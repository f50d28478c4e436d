"""The agent's state in a run's internals (see `agentapps.core.slots`): all of it per run. What
the agents spent in a run is the run log's `AGENT_TOTALS`: the run's record and outcome read it,
and a run that never starts an agent never loads this package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.slots import Slot

if TYPE_CHECKING:
    from agentapps.agent.checkpoint import Resumable, Ticket
    from agentapps.agent.script import Cursor, Recorder
    from agentapps.agent.spend import Spend

AGENT_SPEND: Slot[Spend | None] = Slot("agent.spend", lambda: None, per_run=True)  # capped by --max-cost
AGENT_RECORDER: Slot[Recorder | None] = Slot("agent.recorder", lambda: None, per_run=True)  # --record
AGENT_SCRIPTS: Slot[dict[str, Cursor]] = Slot("agent.scripts", dict, per_run=True)  # --replay cursors by path
# `agentapps run`'s checkpoint ticket (agentapps.agent.checkpoint), and each checkpointing agent's
# link to its provider loop, by hook ref
AGENT_TICKET: Slot[Ticket | None] = Slot("agent.ticket", lambda: None, per_run=True)
AGENT_RESUMABLE: Slot[dict[str, Resumable]] = Slot("agent.resumable", dict, per_run=True)
