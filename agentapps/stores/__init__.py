"""Persistent stores: key-value state, sessions, and the Redis connection events and callbacks use.

One interface, three backends (`memory`: this process; `file`: `.agent-apps/` of the checkout;
`redis`: every process of the project, on any machine, through AGENTAPPS_REDIS_URL). Which one a
call gets: its own `store` argument, else the project's main skill (`stores: {default: redis,
state: file, ...}`, config.py), else the built-in default (state: file, the others: memory).

Using it from Python (a server, a scheduler), with `g` the process's `Globals`:

    from agentapps.stores.state import store_for, MISSING
    state = store_for(g, "redis")               # or store_for(g): the project's choice
    state.set("lock:nightly", owner, expect=None, ttl=60)   # take a lease: ConflictError if held
    state.set("lock:nightly", owner, expect=owner, ttl=60)  # renew it (only if still ours)
    state.get("thread:42"); state.delete("thread:42"); state.list("thread:")
    value = await state.wait("approval:7", timeout=300)     # seconds; LimitError when it passes

`StateStore` (state.py) is the whole state interface: get, set (compare-and-swap `expect`, where
None means absent, checked and written as one atomic step; `ttl` in seconds), delete, list by
prefix, and async `wait` (Redis: notified, never polled). Sessions (`sessions.open_store(g, name)`):
load, append with a rolling window (atomic under concurrent appends), all_keys, clear. Events on
Redis Streams: `agentapps.events.streams.streams_for(g)`; cross-process callback refs:
`agentapps.callbacks.refs.create_callback_ref(g, store="redis")`. `config.link_for(g)` is the
process's `RedisLink` (namespaced keys via `link.key(...)`, errors as StoreUnavailableError: exit 2
when the server never answered, 1 when it went away mid-run). Skill-facing times are milliseconds;
these Python interfaces take seconds.
"""
