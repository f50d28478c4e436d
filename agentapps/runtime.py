"""Public: state, sessions, events and callbacks, as the runtime skills use them. Stable within
a major version (see `agentapps`).

    from agentapps.runtime import store_for

State:
    store_for(g, kind=None)         the state store `kind` ("file", "memory", "redis"; None: the project's)
    UNCONDITIONAL                   `expect=` of a store's `set` when there is nothing to compare
Sessions:
    settings_of(served)             the served skill's session settings (None: no session)
    session_key(served, settings)   this call's session key (None: no session this time)
    open_store(g, name=None)        a session store; `history_for(served)` the served skill's history
    capture(served, settings, status, error, result)   one history entry for this call
    render_history(entries)         history as markdown for a prompt
    note_session(internals, key)    the run log's session id for this run (the first key noted wins)
Schedules (kept in the state store, run by `agentapps serve`):
    create_schedule(store, skill, cron, args=, catch_up=, schedule_id=)   ConflictError when the id is taken
    list_schedules(store), delete_schedule(store, id)
Events and input:
    events_for(g, store=None)       the event backend; `EventBus` the in-process one
    endpoint(g, ref)                the reply queue of a callback ref made without a function
    GATEWAY, receive(prompt)        this run's user-input gateway and the next message from it
(`create_callback_ref` and `release_callback_ref` are in `agentapps` itself.)

Names are imported on first use: importing this module imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.exports import lazy_exports

if TYPE_CHECKING:
    from agentapps.callbacks.refs import endpoint
    from agentapps.events.bus import EventBus
    from agentapps.events.select import events_for
    from agentapps.gateway import GATEWAY, receive
    from agentapps.runlog import note_session
    from agentapps.stores.schedules import create as create_schedule
    from agentapps.stores.schedules import delete as delete_schedule
    from agentapps.stores.schedules import listed as list_schedules
    from agentapps.stores.session_settings import settings_of
    from agentapps.stores.sessions import (
        capture,
        history_for,
        open_store,
        render_history,
        session_key,
    )
    from agentapps.stores.state import MISSING as UNCONDITIONAL
    from agentapps.stores.state import store_for

_EXPORTS = {
    "store_for": "agentapps.stores.state",
    "create_schedule": "agentapps.stores.schedules:create",
    "list_schedules": "agentapps.stores.schedules:listed",
    "delete_schedule": "agentapps.stores.schedules:delete",
    "UNCONDITIONAL": "agentapps.stores.state:MISSING",
    "settings_of": "agentapps.stores.session_settings",
    "session_key": "agentapps.stores.sessions",
    "open_store": "agentapps.stores.sessions",
    "history_for": "agentapps.stores.sessions",
    "capture": "agentapps.stores.sessions",
    "render_history": "agentapps.stores.sessions",
    "note_session": "agentapps.runlog",
    "events_for": "agentapps.events.select",
    "EventBus": "agentapps.events.bus",
    "endpoint": "agentapps.callbacks.refs",
    "GATEWAY": "agentapps.gateway",
    "receive": "agentapps.gateway",
}

__all__ = ["GATEWAY", "UNCONDITIONAL", "EventBus", "capture", "create_schedule", "delete_schedule", "endpoint",
           "events_for", "history_for", "list_schedules", "note_session", "open_store", "receive", "render_history",
           "session_key", "settings_of", "store_for"]

__getattr__ = lazy_exports(__name__, _EXPORTS)
