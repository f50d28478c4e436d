"""Which backend each store call uses, and the project's Redis link (the main skill's `stores:`).

    stores:
      default: redis          # every concern that has this backend (state, sessions, events, callbacks)
      state: file             # or per concern
      namespace: my-project   # default: the main skill's name (never the project's path)
      visibilityTimeout: 30000  # ms before an event taken and not acknowledged is delivered again
      maxDeliveries: 5        # deliveries of one event before it goes to `TOPIC.dead-letter`
      checkpointTtl: 604800000  # ms an agent run's checkpoint is kept without being written (7 days)

A call's own `store` argument wins, then a skill's own setting (`metadata.session.store`), then
`stores.<concern>`, then `stores.default`, then the built-in default (state: file, the others:
memory).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agentapps.errors import ConfigError, UsageError
from agentapps.stores.slots import REDIS_LINK, STATE_STORES

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.stores.link import RedisLink

BACKENDS: Final = {
    "state": ("memory", "file", "redis"),
    "sessions": ("memory", "file", "redis"),
    "events": ("memory", "redis"),
    "callbacks": ("memory", "redis"),
}
BUILT_IN: Final = {"state": "file", "sessions": "memory", "events": "memory", "callbacks": "memory"}
FIELDS: Final = ("default", *BACKENDS, "namespace", "visibilityTimeout", "maxDeliveries", "checkpointTtl")
CHECKPOINT_TTL_MS: Final = 7 * 86_400_000
MAX_CHECKPOINT_TTL_MS: Final = 365 * 86_400_000
_NAMESPACE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class StoresConfig:
    """The stores a project chose (file or redis) for state, sessions and events."""

    chosen: dict[str, str] = field(default_factory=dict)  # concern -> backend, from `stores:`
    namespace: str | None = None
    visibility: float = 30.0  # seconds
    max_deliveries: int = 5
    checkpoint_ttl: float = CHECKPOINT_TTL_MS / 1000  # seconds (agentapps.agent.checkpoint)


def parse(value: Any, *, skill: str, main_name: str | None) -> StoresConfig:
    """Read a main skill's `stores:` (absent: every built-in default)."""
    found, problems = _parse(value, skill, main_name)
    if problems:
        raise problems[0]
    return found


def problems(value: Any, *, skill: str) -> list[ConfigError]:
    """Every problem of a main skill's `stores:` (parse() raises the first): for `check`."""
    return _parse(value, skill, skill)[1]


def _parse(value: Any, skill: str, main_name: str | None) -> tuple[StoresConfig, list[ConfigError]]:
    found: list[ConfigError] = []

    def bad(why: str, key: str | None = None) -> None:
        found.append(ConfigError(f"Main skill '{skill}' has an invalid `stores` setting: {why}.", skill=skill,
                                 setting=("stores", key) if key else ("stores",)))

    if value is None:
        return StoresConfig(namespace=main_name), found
    if not isinstance(value, dict):
        bad("use a mapping like {default: redis}")
        return StoresConfig(namespace=main_name), found
    for unknown in sorted(str(k) for k in value if k not in FIELDS):
        bad(f"unknown field {unknown!r} (fields: {', '.join(FIELDS)})", unknown)
    chosen: dict[str, str] = {}
    default = value.get("default")
    if default is not None and default not in ("memory", "file", "redis"):
        bad("`default` must be memory, file or redis", "default")
    for concern, allowed in BACKENDS.items():
        own = value.get(concern)
        if own is not None and own not in allowed:
            bad(f"`{concern}` must be {' or '.join(allowed)}", concern)
        elif own is not None:
            chosen[concern] = own
        elif default in allowed:
            chosen[concern] = default
    namespace = value.get("namespace", main_name)
    if namespace is not None and (not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace)):
        bad("`namespace` must be 1-64 characters of letters, digits, '.', '_' and '-'", "namespace")
    visibility = value.get("visibilityTimeout", 30_000)
    if isinstance(visibility, bool) or not isinstance(visibility, int | float) or not 100 <= visibility <= 86_400_000:
        bad("`visibilityTimeout` must be milliseconds from 100 to 86400000", "visibilityTimeout")
        visibility = 30_000
    most = value.get("maxDeliveries", 5)
    if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= 1000:
        bad("`maxDeliveries` must be a whole number from 1 to 1000", "maxDeliveries")
    ttl = value.get("checkpointTtl", CHECKPOINT_TTL_MS)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 1000 <= ttl <= MAX_CHECKPOINT_TTL_MS:
        bad(f"`checkpointTtl` must be milliseconds from 1000 to {MAX_CHECKPOINT_TTL_MS} (365 days)", "checkpointTtl")
        ttl = CHECKPOINT_TTL_MS
    return StoresConfig(chosen, namespace, visibility / 1000, most, ttl / 1000), found


def stores_config(g: Globals) -> StoresConfig:
    """The project's `stores:` settings, read once per process."""
    cache = g.cache_for("stores")
    found = cache.get("config")
    if found is None:
        main = g.config.main_tool
        try:
            found = cache["config"] = parse(main.metadata.get("stores") if main else None,
                                            skill=main.name if main else "main",
                                            main_name=main.name if main else None)
        except ConfigError as exc:
            if main is not None:
                from agentapps.context.origin import origin, value_at

                where = origin([main], exc.setting, value_at(main.metadata, exc.setting))
                if where is not None:
                    exc.file, exc.line = str(where[0]), where[1]
            raise
    return found


def backend(g: Globals, concern: str, explicit: str | None = None) -> str:
    """The backend `concern` uses for this call: `explicit`, else the project's choice, else built-in."""
    if explicit is not None:
        if explicit not in BACKENDS[concern]:
            raise UsageError(f"There is no '{explicit}' store for {concern}; use "
                             f"{' or '.join(BACKENDS[concern])}.")
        return explicit
    return stores_config(g).chosen.get(concern, BUILT_IN[concern])


def link_for(g: Globals) -> RedisLink:
    """The process's Redis link (AGENTAPPS_REDIS_URL, the project's namespace), connected on first use."""
    link = g.internals.get(REDIS_LINK)
    if link is None:
        from agentapps.stores.link import RedisLink, redis_url

        namespace = stores_config(g).namespace
        if namespace is None:
            raise ConfigError("The Redis store needs the project's name to keep its keys apart: add a main "
                              "skill (`agentapps init`) or set `stores: {namespace: NAME}` in it.")
        link = RedisLink(redis_url(), namespace, g.internals.redactor)
        link.connect()
        g.internals.set(REDIS_LINK, link)
        g.internals.cleanups.append(_closer(g))
    return link


def _closer(g: Globals) -> Any:
    async def close() -> None:
        """At the end of a run: release what this process owns on the server, then disconnect (what
        was made on the link lets go of it in `link.on_close`: the Redis event backend does)."""
        internals = g.internals
        link = internals.get(REDIS_LINK)
        internals.set(REDIS_LINK, None)
        internals.get(STATE_STORES).pop("redis", None)
        if link is not None:
            for stop in link.on_close:
                stop()
            link.close()

    return close
