"""The run log's state in a run's internals (see `agentapps.core.slots`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.slots import Slot

if TYPE_CHECKING:
    from agentapps.runlog.batch import Batcher

# the first session a run used: its record's session id
SESSION_KEY: Slot[str | None] = Slot("runlog.session_key", lambda: None, per_run=True)
RUN_LOG: Slot[Batcher | None] = Slot("runlog.batch", lambda: None)  # a server's records, written in batches
