"""What one check covers: the roots and files to check, the search path that names resolve on, and sites."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentapps.boot import bundled_skills_dir, find_project, search_path
from agentapps.check.findings import Finding, Severity
from agentapps.errors import SkillLoadError, UsageError
from agentapps.tools.index import Broken, RootIndex
from agentapps.tools.loader import load_file
from agentapps.tools.locate import Key, KeyLines
from agentapps.tools.lookup import EVERYTHING, Lookup
from agentapps.tools.names import is_skill_file, name_from_file
from agentapps.tools.skilldirs import PROJECT_FOLDER_KINDS
from agentapps.types import PathEntry, ToolDef

PROJECT_KINDS = ("compiled", "project-skills", "project", *sorted(PROJECT_FOLDER_KINDS))  # .agents/.claude/.github skills


@dataclass
class Scope:
    """The checked roots (and single files), plus a Lookup that puts them first on the search path."""

    cwd: Path
    project: Path | None
    main: ToolDef | None
    lookup: Lookup
    roots: list[RootIndex]
    files: list[ToolDef | Broken]
    bundled: RootIndex
    _tags: dict[str, set[str]] | None = field(default=None, repr=False)
    _names: set[str] | None = field(default=None, repr=False)
    _unlisted: set[str] | None = field(default=None, repr=False)
    _bundled_names: dict[str, list[ToolDef | Broken]] | None = field(default=None, repr=False)
    _items: list[ToolDef | Broken] | None = field(default=None, repr=False)
    _paths: list[str] | None = field(default=None, repr=False)
    _folders: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    def names(self) -> set[str]:
        """Every skill name findable while checking (broken files included: they are named), and
        the tools of declared MCP servers whose tool lists are cached."""
        if self._names is None:
            from agentapps.check.mcp import known_tools

            declaring = [t for t in [self.main, *self.items()] if isinstance(t, ToolDef) and t.metadata.get("mcp")]
            mcp_names, self._unlisted = known_tools(self, declaring)
            self._names = set(self.lookup.all_names()) | {item.name for item in self.files} | mcp_names
        return self._names

    def bundled_named(self, name: str) -> list[ToolDef | Broken]:
        """The bundled definitions named `name` (the bundled index decoded once per check)."""
        if self._bundled_names is None:
            self._bundled_names = self.bundled.by_name
        found = self._bundled_names.get(name) or []
        if found and self.lookup.reads is not None:
            self.lookup.reads.add(EVERYTHING)  # the bundled file's bytes decide (roots.shadowing)
        return found

    def unlisted_servers(self) -> set[str]:
        """Declared MCP servers (sanitised names) whose tools are not known without starting them."""
        self.names()
        return self._unlisted or set()

    def tags(self) -> dict[str, set[str]]:
        """tag -> names of the winning skills carrying it."""
        if self.lookup.reads is not None:
            self.lookup.reads.add(EVERYTHING)  # every skill's tags: a finding made from them is never kept
        if self._tags is None:
            tools, _ = self.lookup.list_all()
            self._tags = {}
            for tool in [*tools, *(f for f in self.files if isinstance(f, ToolDef))]:
                for tag in tool.tags:
                    self._tags.setdefault(tag, set()).add(tool.name)
        return self._tags

    def has_file(self, folder: str, name: str) -> bool:
        """Whether `folder` holds a file (or a link to one) named `name`: each folder is listed once
        per check, so asking for the tests file of every skill costs one listing per folder, not
        one stat per skill."""
        names = self._folders.get(folder)
        if names is None:
            try:
                names = frozenset(os.listdir(folder))
            except OSError:
                names = frozenset()
            self._folders[folder] = names
        return name in names and os.path.isfile(os.path.join(folder, name))

    def shown(self, path: Path | str | None) -> str:
        """A path as findings print it: relative to the working directory when it is inside it."""
        if path is None:
            return "<memory>"
        p = Path(path)
        return str(p.relative_to(self.cwd)) if p.is_relative_to(self.cwd) else str(p)

    def items(self) -> list[ToolDef | Broken]:
        """Every checked file once, in path order (read once per check: the roots do not change
        while it runs)."""
        if self._items is not None:
            return self._items
        seen: dict[str, ToolDef | Broken] = {}
        for index in self.roots:
            for path, item in zip(index.files, index.items(), strict=True):  # (index.items() is in files order)
                seen.setdefault(path, item)
        for item in self.files:
            seen.setdefault(str(item.path), item)
        self._paths = sorted(seen)
        self._items = [seen[p] for p in self._paths]
        return self._items

    def paths(self) -> list[str]:
        """The path of each of `items()` as text (a Path made from the cache is parsed again by
        str(): at 50 000 skills that alone cost about 0.2 s)."""
        self.items()
        assert self._paths is not None
        return self._paths


@dataclass
class Site:
    """One loaded skill being checked: makes its findings, with lines found lazily."""

    tool: ToolDef
    scope: Scope
    lines: KeyLines

    def at(self, keys: Sequence[Key], severity: Severity, code: str, message: str) -> Finding:
        return self.at_line(self.lines.line(keys), severity, code, message)

    def at_line(self, line: int, severity: Severity, code: str, message: str) -> Finding:
        return Finding(self.scope.shown(self.tool.path), line, severity, code, message)


def _load_one(path: Path, entries: Sequence[PathEntry]) -> ToolDef | Broken:
    """A single file, loaded as a run loads it by path: a file inside a search-path root is one of
    that root's skills (so its project's main skill configures it)."""
    root = next((e for e in entries if path.is_relative_to(e.directory)), None)
    try:
        if root is None:
            return load_file(path)
        return load_file(path, root=root.directory, root_kind=root.kind)
    except SkillLoadError as exc:
        return Broken(name_from_file(path.name, path.parent.name), path, exc)


def build_scope(cwd: Path, paths: Sequence[Path] = ()) -> Scope:
    """Check `paths` (folders scanned like a project root, or skill files), else the project's roots."""
    cwd = cwd.resolve()
    project, main = find_project(cwd)
    entries = search_path(cwd, project, main)
    targets: list[PathEntry] = []
    files: list[ToolDef | Broken] = []
    for raw in paths:
        path = (cwd / raw).resolve()
        if path.is_dir():
            targets.append(PathEntry(path, "project"))
        elif path.is_file() and is_skill_file(path.name):
            files.append(_load_one(path, entries))
        elif path.exists():
            raise UsageError(
                f"'{raw}' is not a skill file: use NAME.skill.md, NAME.skill.py or NAME/SKILL.md.")
        else:
            raise UsageError(f"No such file or folder: '{raw}'.")
    if not paths:
        targets = [e for e in entries if e.kind in PROJECT_KINDS]
    taken = {e.directory for e in targets}
    lookup = Lookup(targets + [e for e in entries if e.directory not in taken])
    roots = lookup.indexes[: len(targets)]  # the lookup's own indexes: each root is read once
    for index in roots:
        index.ensure(force_check=True, interval=0.0)
    bundled = RootIndex(PathEntry(bundled_skills_dir(), "bundled"))
    bundled.scan()
    return Scope(cwd, project, main, lookup, roots, files, bundled)
