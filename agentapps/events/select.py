"""The event backend a call uses: the in-process bus (`memory`) or Redis Streams (`redis`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.events.bus import EventBus
    from agentapps.events.streams import StreamBus


def events_for(g: Globals, store: str | None = None) -> EventBus | StreamBus:
    """`store` (None: the project's `stores:` choice, else memory) as an event backend."""
    from agentapps.stores.config import backend

    if backend(g, "events", store) == "redis":
        from agentapps.events.streams import streams_for

        return streams_for(g)
    from agentapps.events.bus import bus_for

    return bus_for(g)
