"""The metadata cascade: skill -> authority -> $inherit chain (C3) -> default, with $merge and $private."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentapps.cascade.annotations import line_of, unsupported
from agentapps.cascade.c3 import linearize
from agentapps.cascade.interpolate import needs_interpolation
from agentapps.cascade.merge import merge_levels
from agentapps.core.shown import fields_repr
from agentapps.errors import ConfigError, SkillNotFoundError
from agentapps.tools.lookup import Lookup
from agentapps.tools.skilldirs import PROJECT_FOLDER_KINDS
from agentapps.types import ChainPlan, ToolDef

DEFAULT = "default"
AUTHORITY = "$authority"  # `$inherit: $authority` names the project's main skill
INTERFACE_KEYS = frozenset({"params", "returns", "allowed-tools", "role", "tags", "visibility", "main"})
NOT_INHERITED = frozenset({"role", "tags", "visibility", "main"})
ANNOTATIONS = frozenset({"$inherit", "$private", "$merge"})


class Cascaded:
    """A tool's cascaded metadata, the tools that contributed to it, and whether it depends on args."""

    FIELDS = ("meta", "contributors", "dynamic", "checked_at", "interface", "plan")
    __slots__ = FIELDS
    meta: dict[str, Any]
    contributors: list[ToolDef]
    dynamic: bool
    checked_at: float
    # `params`/`returns` as resolved through `$inherit`, filled on first use (valid as long as the
    # cascade is: its contributors include every `$inherit` parent)
    interface: dict[str, dict[str, Any] | None]
    plan: ChainPlan | None  # the chain this metadata resolves to, filled on first use

    def __init__(self, meta: dict[str, Any], contributors: list[ToolDef], dynamic: bool, checked_at: float = 0.0,
                 interface: dict[str, dict[str, Any] | None] | None = None, plan: ChainPlan | None = None) -> None:
        self.meta, self.contributors, self.dynamic, self.checked_at = meta, contributors, dynamic, checked_at
        self.interface = {} if interface is None else interface
        self.plan = plan

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


def parents_of(meta: dict[str, Any]) -> list[str] | None:
    """The names a skill's `$inherit` lists; None means `$inherit: false` (no cascade at all)."""
    value = meta.get("$inherit")
    if value is False:
        return None
    if value is None or value is True:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError("`$inherit` must be a skill name, a list of names, or false.")


def inherit_chain(tool: ToolDef, find: Callable[[str, str], ToolDef],
                  authority: ToolDef | None = None) -> list[ToolDef]:
    """`tool`'s `$inherit` ancestors in C3 order, nearest first (`default` is not one of them).

    `find(name, child)` returns the parent `name` that skill `child` lists, or raises; this walk is
    shared by the cascade, interface resolution and `check`, which differ only in that error.
    `$inherit: $authority` names the project's main skill."""
    found: dict[str, ToolDef] = {tool.name: tool}
    referrer: dict[str, str] = {}

    def parents(name: str) -> list[str]:
        if name == AUTHORITY and name not in found:
            if authority is None or authority is tool:
                raise ConfigError(f"Skill '{referrer.get(name, tool.name)}' inherits from $authority, but "
                                  "this project has no main skill (role: main) to inherit from.",
                                  skill=tool.name, file=tool.path)
            found[name] = authority
        if name not in found:
            found[name] = find(name, referrer.get(name, tool.name))
        listed = [p for p in (parents_of(found[name].metadata) or []) if p != DEFAULT]
        for parent in listed:
            referrer.setdefault(parent, name)
        return listed

    return [found[name] for name in linearize(tool.name, parents)[1:]]


def _level(meta: dict[str, Any], drop: frozenset[str]) -> dict[str, Any]:
    private = meta.get("$private") or []
    hidden = set(private if isinstance(private, list) else [private])
    return {k: v for k, v in meta.items() if k not in drop and k not in hidden and k not in ANNOTATIONS}


def applies_authority(tool: ToolDef, authority: ToolDef | None, project: Path | None) -> bool:
    if authority is None or project is None or tool.path is None or tool is authority:
        return False
    if (tool.root_kind not in ("compiled", "project", "project-skills", "env", "package")
            and tool.root_kind not in PROJECT_FOLDER_KINDS):
        return False
    return tool.path.is_relative_to(project)


def cascade(tool: ToolDef, lookup: Lookup, authority: ToolDef | None, project: Path | None) -> Cascaded:
    own = tool.metadata
    refuse_unsupported(tool)
    parents = parents_of(own)
    levels: list[dict[str, Any]] = [{k: v for k, v in own.items() if k not in ANNOTATIONS}]
    contributors: list[ToolDef] = [tool]
    merges: list[dict[str, Any]] = [own.get("$merge") or {}]
    if parents is not None:
        if applies_authority(tool, authority, project):
            assert authority is not None
            levels.append(_level(authority.metadata, INTERFACE_KEYS))
            merges.append(authority.metadata.get("$merge") or {})
            contributors.append(authority)
        def find(name: str, child: str) -> ToolDef:
            try:
                return lookup.find(name)
            except SkillNotFoundError:
                raise ConfigError(f"Skill '{tool.name}' inherits from '{name}', which does not exist.",
                                  skill=tool.name, file=tool.path) from None

        try:
            chain = inherit_chain(tool, find, authority if applies_authority(tool, authority, project) else None)
        except ConfigError as exc:
            if exc.file is None and tool.path is not None:
                exc.file = str(tool.path)  # point at the skill whose $inherit is wrong
            raise
        for parent in chain:
            levels.append(_level(parent.metadata, NOT_INHERITED))
            merges.append(parent.metadata.get("$merge") or {})
            contributors.append(parent)
        if tool.name != DEFAULT:
            try:
                default = lookup.find(DEFAULT)
            except SkillNotFoundError:
                default = None
            if default is not None:
                levels.append(_level(default.metadata, INTERFACE_KEYS))
                merges.append(default.metadata.get("$merge") or {})
                contributors.append(default)
    strategies: dict[str, str] = {"$order": "deep"}
    for declared in reversed(merges):
        if isinstance(declared, dict):
            strategies.update({str(k): str(v) for k, v in declared.items()})
    for contributor in contributors[1:]:
        refuse_unsupported(contributor)  # (an ancestor's would reach this skill's metadata)
    meta = merge_levels(levels, strategies)
    dynamic = any(_interpolates(c) for c in contributors) and needs_interpolation(meta)
    return Cascaded(meta, contributors, dynamic)


def refuse_unsupported(tool: ToolDef) -> None:
    """A `$` annotation agentapps does not implement is a configuration error naming the skill, its
    file and the line (checked once per definition: the verdict is kept on it)."""
    metadata = tool.metadata
    hit: tuple[dict[str, Any], tuple[list[str], str] | None] | None = tool.derived.get("unsupported")
    if hit is None or hit[0] is not metadata:
        hit = (metadata, unsupported(metadata))
        tool.derived["unsupported"] = hit
    if hit[1] is not None:
        keys, message = hit[1]
        raise ConfigError(f"Skill '{tool.name}': {message}", skill=tool.name, file=tool.path,
                          line=line_of(tool.path, keys[-1]))


def _interpolates(tool: ToolDef) -> bool:
    """Whether a contributor's metadata holds a `${...}` anywhere, once per definition (kept on it):
    the merged metadata can hold one only if a contributor does, and most cascades share the same
    few ancestors (the project's main skill, the default pipeline) whose metadata is large."""
    metadata = tool.metadata
    hit: tuple[dict[str, Any], bool] | None = tool.derived.get("interpolates")
    if hit is not None and hit[0] is metadata:
        return hit[1]
    flag = needs_interpolation(metadata)
    tool.derived["interpolates"] = (metadata, flag)
    return flag
