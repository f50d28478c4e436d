"""`metadata.session` settings: the shorthand `args.sessionId` or `{key, capture, maxEntries, store}`.

Every problem is a ConfigError naming its field (`setting`), so a run points at the line that sets
it and `agentapps check` reports them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import ConfigError

if TYPE_CHECKING:
    from agentapps.context.context import Context

DEFAULT_MAX_ENTRIES = 50
STORES = ("memory", "file", "redis")
SENTINELS = ("$all", "$args", "$result", "$agent")


@dataclass(frozen=True)
class SessionSettings:
    """A skill's session setting: the key, what to capture, how much to keep and which store."""

    key: str  # a path expression into the served context, e.g. `args.sessionId`
    capture: tuple[str, ...] = ("$all",)
    max_entries: int = DEFAULT_MAX_ENTRIES
    store: str | None = None  # None: the project's `stores:` choice, else memory


def settings(value: Any, *, skill: str, file: Path | None = None) -> SessionSettings | None:
    """Read `metadata.session`: `args.sessionId` (shorthand) or `{key, capture, maxEntries, store}`."""
    found, problems = _parse(value, skill, file)
    if problems:
        raise problems[0]
    return found


def settings_problems(value: Any, *, skill: str, file: Path | None = None) -> list[ConfigError]:
    """Every problem of a `metadata.session` value (settings() raises the first): for `check`."""
    return _parse(value, skill, file)[1]


def settings_of(served: Context) -> SessionSettings | None:
    """The served skill's session settings; a refused one names the file and line that set it."""
    try:
        return settings(served.meta.get("session"), skill=served.tool.name, file=served.tool.path)
    except ConfigError as exc:
        from agentapps.context.origin import place

        place(exc, served)
        raise


def _parse(value: Any, skill: str, file: Path | None) -> tuple[SessionSettings | None, list[ConfigError]]:
    if value is None or value is False:
        return None, []
    problems: list[ConfigError] = []

    def bad(why: str, field: str | None = None) -> None:
        problems.append(ConfigError(f"Skill '{skill}' has an invalid `session` setting: {why}.", skill=skill,
                                    file=file, setting=("session", field) if field else ("session",)))

    if isinstance(value, str):
        value = {"key": value}
    if not isinstance(value, dict):
        bad("use a path like args.sessionId, or {key, capture, maxEntries, store}")
        return None, problems
    for unknown in sorted(str(k) for k in set(value) - {"key", "capture", "maxEntries", "store"}):
        bad(f"unknown field {unknown!r} (fields: key, capture, maxEntries, store)", unknown)
    key, capture = value.get("key"), value.get("capture", ["$all"])
    if not isinstance(key, str) or not key.strip():
        bad("`key` must be a path into the context, e.g. args.sessionId", "key")
    capture = [capture] if isinstance(capture, str) else capture
    if not isinstance(capture, list) or not capture or not all(isinstance(c, str) and c for c in capture):
        bad("`capture` must be a list of $all, $args, $result, $agent or dotted paths", "capture")
    else:
        odd = [c for c in capture if c.startswith("$") and c not in SENTINELS]
        if odd:
            bad(f"`capture` has {odd[0]!r}; the $ entries are {', '.join(SENTINELS)}", "capture")
    most = value.get("maxEntries", DEFAULT_MAX_ENTRIES)
    if not isinstance(most, int) or isinstance(most, bool) or most < 1:
        bad("`maxEntries` must be a whole number of at least 1", "maxEntries")
    store = value.get("store")
    if store is not None and store not in STORES:
        bad("`store` must be memory, file or redis", "store")
    if problems:
        return None, problems
    assert isinstance(key, str)
    return SessionSettings(key.strip(), tuple(capture), most, store), []
