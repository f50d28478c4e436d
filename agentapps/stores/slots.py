"""The stores' state in a run's internals (see `agentapps.core.slots`): the process's, shared by
every run a server serves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.core.slots import Slot

if TYPE_CHECKING:
    from agentapps.stores.link import RedisLink
    from agentapps.stores.state import StateStore

REDIS_LINK: Slot[RedisLink | None] = Slot("stores.redis", lambda: None)  # AGENTAPPS_REDIS_URL, opened on first use
STATE_STORES: Slot[dict[str, StateStore]] = Slot("stores.state", dict)  # by kind
MEMORY_SESSIONS: Slot[dict[str, Any]] = Slot("stores.sessions", dict)  # the memory session store's data
