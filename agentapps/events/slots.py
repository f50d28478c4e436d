"""The event backends in a run's internals (see `agentapps.core.slots`): the process's, shared by
every run a server serves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.slots import Slot

if TYPE_CHECKING:
    from agentapps.events.bus import EventBus
    from agentapps.events.streams import StreamBus

EVENT_BUS: Slot[EventBus | None] = Slot("events.bus", lambda: None)  # in process, made on first use
STREAM_BUS: Slot[StreamBus | None] = Slot("events.streams", lambda: None)  # Redis Streams (`store: redis`)
