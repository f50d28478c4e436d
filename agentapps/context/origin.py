"""Where a cascaded metadata setting is written: the file and line that a run's ConfigError and a
check finding point at (the skill itself, its project's main skill or an `$inherit` parent)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError, ConfigError
from agentapps.tools.locate import KeyLines
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context

MISSING: Any = object()


def value_at(meta: Any, keys: Sequence[str]) -> Any:
    for key in keys:
        if not isinstance(meta, Mapping) or key not in meta:
            return MISSING
        meta = meta[key]
    return meta


def written_in(contributors: Sequence[ToolDef], setting: Sequence[str], value: Any = MISSING) -> ToolDef | None:
    """The contributor that writes `setting` (most specific first, preferring one whose value is
    `value`); else, for a key that is missing, the one that writes the nearest enclosing key."""
    for n in range(len(setting), 0, -1):
        having = [c for c in contributors if value_at(c.metadata, setting[:n]) is not MISSING]
        if having and n == len(setting) and value is not MISSING:
            return next((c for c in having if value_at(c.metadata, setting) == value), having[0])
        if having:
            return having[0]
    return None


def origin(contributors: Sequence[ToolDef], setting: Sequence[str], value: Any = MISSING,
           lines: Callable[[Path], KeyLines] = KeyLines) -> tuple[Path, int] | None:
    """(file, line) of the key that writes `setting`, or None when no file writes it."""
    tool = written_in(contributors, setting, value)
    if tool is None or tool.path is None:
        return None
    keys = ["metadata", *setting]
    if value_at(tool.metadata, setting) is MISSING:  # a missing key: where its enclosing one is
        return tool.path, lines(tool.path).line(keys)
    line = lines(tool.path).written(keys)
    return None if line is None else (tool.path, line)


def place(exc: ConfigError, served: Context, used: Mapping[str, Any] | None = None) -> None:
    """Point a run's ConfigError at the file and line of the setting it names, when the value the
    run used is the served skill's cascaded one (`used`: the settings the run read, as metadata;
    None when it read the served skill's metadata itself). Anything else is left as it is."""
    if not exc.setting or exc.line is not None:
        return
    meta = served.meta
    for n in range(len(exc.setting), 0, -1):  # a missing key is pointed at by its enclosing one
        keys = exc.setting[:n]
        mine = value_at(meta, keys)
        if used is not None and value_at(used, keys) != mine:
            return  # the run was given another value (an override, a sub-agent's own config)
        if mine is not MISSING:
            break
    found = written_at(served, exc.setting)
    if found is not None:
        exc.file, exc.line = str(found[0]), found[1]


def written_at(served: Context, setting: Sequence[str]) -> tuple[Path, int] | None:
    """(file, line) that writes `setting` of the served skill's cascaded metadata, if a file does."""
    from agentapps.context.plan import cascaded

    try:
        contributors = cascaded(served.tool, served.globals).contributors
    except AgentAppsError:  # locating is best effort: the error itself must still surface
        return None
    return origin(contributors, setting, value_at(served.meta, setting))
