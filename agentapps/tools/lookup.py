"""Resolution: a ref (bare name, path or URI) to a ToolDef along the search path, shadowing included."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Protocol

from agentapps.core.shown import fields_repr
from agentapps.errors import SkillLoadError, SkillNotFoundError
from agentapps.tools.index import Broken, RootIndex
from agentapps.tools.loader import RUN_STARTED, load_file, refuse_if_written_after
from agentapps.tools.names import did_you_mean, is_skill_file, name_from_file, ref_kind
from agentapps.tools.packages import verify_tool
from agentapps.types import PathEntry, ToolDef

EVERYTHING = "*"  # in Lookup.reads: every skill was read (a listing), not only some names


class ToolProvider(Protocol):
    """Registers in-memory tools on demand (MCP servers' tools): `name` is the bare name or URI
    being resolved, None to register everything (listing); `fresh` asks to look again after a
    miss everywhere else."""

    def provide(self, lookup: Lookup, name: str | None, fresh: bool, /) -> None: ...

    def problems(self) -> list[str]:
        """What went wrong registering tools (shown by `agentapps list`, never fatal there)."""
        ...


class Lookup:
    """Everything findable from one search path plus the in-memory tools (checked first)."""

    FIELDS = ("roots", "memory", "providers", "check_interval", "_indexes", "_by_path", "_memo", "_listed",
              "_memory_version")
    __slots__ = (*FIELDS, "_summarised", "reads")
    roots: list[PathEntry]
    memory: dict[str, ToolDef]
    # register in-memory tools on demand, before the disk is searched (MCP servers' tools)
    providers: list[ToolProvider]
    check_interval: float
    _indexes: list[RootIndex]
    _by_path: dict[str, ToolDef]
    # when a set: every name asked for is added to it, and "*" when everything was read (a listing);
    # `check` learns so which skills each skill's findings depend on (agentapps.check.cache)
    reads: set[str] | None
    _memo: dict[str, tuple[ToolDef, int, float]]
    _listed: tuple[tuple[int, bool, int], list[ToolDef], list[SkillLoadError]] | None
    _memory_version: int
    # the last list_summaries() answer, by (index generations, memory version)
    _summarised: tuple[tuple[int, int], list[dict[str, Any]], list[SkillLoadError]] | None

    def __init__(self, roots: list[PathEntry], memory: dict[str, ToolDef] | None = None,
                 providers: list[ToolProvider] | None = None, check_interval: float = 1.0,
                 _indexes: list[RootIndex] | None = None, _by_path: dict[str, ToolDef] | None = None,
                 _memo: dict[str, tuple[ToolDef, int, float]] | None = None,
                 _listed: tuple[tuple[int, bool, int], list[ToolDef], list[SkillLoadError]] | None = None,
                 _memory_version: int = 0) -> None:
        self.roots = roots
        self.memory = {} if memory is None else memory
        self.providers = [] if providers is None else providers
        self.check_interval = check_interval
        self._indexes = [RootIndex(entry) for entry in roots]  # one per root, whatever `_indexes` says
        self._by_path = {} if _by_path is None else _by_path
        self._memo = {} if _memo is None else _memo
        self._listed, self._memory_version = _listed, _memory_version
        self._summarised = None
        self.reads = None

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)

    @property
    def indexes(self) -> list[RootIndex]:
        """One index per root, in search-path order."""
        return self._indexes

    @property
    def key(self) -> str:
        """Identifies this search path in caches."""
        return "\0".join(f"{r.kind}:{r.directory}" for r in self.roots)

    def _generation(self) -> int:
        total = 0
        for index in self._indexes:
            total += index.generation
        return total

    def register(self, tool: ToolDef) -> None:
        self._memo.pop(tool.name, None)
        self.memory[tool.name] = tool
        self._memory_version += 1
        if tool.uri:
            self.memory[tool.uri] = tool

    def unregister(self, name: str) -> None:
        self._memo.pop(name, None)
        tool = self.memory.pop(name, None)
        self._memory_version += 1
        if tool is not None and tool.uri:
            self.memory.pop(tool.uri, None)

    def _provided(self, name: str | None, fresh: bool = False) -> ToolDef | None:
        for provider in self.providers:
            provider.provide(self, name, fresh)
        return None if name is None else self.memory.get(name)

    def resolve(self, ref: str, *, base: Path | None = None) -> ToolDef:
        if ref in self._memo:  # a bare name found before
            return self.find(ref)
        kind = ref_kind(ref)
        if kind == "uri":
            tool = self.memory.get(ref) or (self._provided(ref) if self.providers else None)
            if tool is None and ref.startswith("file://"):
                return self.load_path(Path(ref[len("file://") :]))
            if tool is None:
                raise SkillNotFoundError(f"No in-memory skill is registered as '{ref}'.")
            return tool
        if kind == "path":
            path = Path(ref)  # the shell expands `~`; a literal `~x` here is a file name
            if not path.is_absolute():
                path = (base or Path.cwd()) / path
            if not path.exists() and "/" not in ref and "\\" not in ref and "." not in ref:
                raise SkillNotFoundError(
                    f"No skill named '{ref}': skill names are lowercase letters, digits and '-' "
                    f"(anything else is read as a file path, and there is no file '{ref}' here).",
                )
            return self.load_path(path)
        return self.find(ref)

    def load_path(self, path: Path) -> ToolDef:
        if path.is_dir() and (path / "SKILL.md").is_file():
            path = path / "SKILL.md"
        if not path.is_file():
            raise SkillNotFoundError(f"No skill file at '{path}'.")
        if not is_skill_file(path.name):
            raise SkillNotFoundError(
                f"'{path}' is not a skill file: use NAME.skill.md, NAME.skill.py or NAME/SKILL.md."
            )
        real = str(path.resolve())
        cached = self._by_path.get(real)
        mtime = os.stat(real).st_mtime_ns
        if cached is not None and cached.mtime_ns == mtime:
            return cached
        tool = self._from_roots(Path(real)) or load_file(Path(real))
        refuse_if_written_after(tool)
        verify_tool(tool)
        self._by_path[real] = tool
        return tool

    def _from_roots(self, path: Path) -> ToolDef | None:
        for index in self._indexes:
            if path.is_relative_to(index.entry.directory):
                return load_file(path, root=index.entry.directory, root_kind=index.entry.kind)
        return None

    def candidates(self, name: str, *, force_check: bool = False) -> list[ToolDef | Broken]:
        """Every definition of `name`, in search-path order (the first one wins)."""
        if self.reads is not None:
            self.reads.add(name)
        found: list[ToolDef | Broken] = []
        if name in self.memory or (self.providers and self._provided(name)):
            found.append(self.memory[name])
        for index in self._indexes:
            index.ensure(force_check=force_check, interval=self.check_interval)
            items = index.get(name)
            if len(items) > 1:
                files = " and ".join(str(i.path) for i in items)
                raise SkillLoadError(
                    f"Two skills are named '{name}' in the same folder tree: {files}. Rename one.",
                    skill=name,
                    file=items[0].path,
                )
            found.extend(item for item in items if not _seen(item, found))
        return found

    def find(self, name: str) -> ToolDef:
        if self.reads is not None:
            self.reads.add(name)
        memory = self.memory.get(name) or (self._provided(name) if self.providers else None)
        if memory is not None:
            return memory
        memo = self._memo.get(name)
        now = time.monotonic()
        if memo is not None and now - memo[2] < self.check_interval and memo[1] == self._generation():
            tool = memo[0]
            if RUN_STARTED.get() is not None:  # within a run the definition stands: a file written
                return tool  # after the run started is never loaded anyway
            try:  # outside one run (a server between requests), one stat keeps edits visible at once
                if tool.path is None or os.stat(tool.path).st_mtime_ns == tool.mtime_ns:
                    return tool
            except OSError:
                pass
        winner = self._find(name)
        refuse_if_written_after(winner)
        verify_tool(winner)  # an installed package's skill: the package is what the lock pins
        self._memo[name] = (winner, self._generation(), now)
        return winner

    def _find(self, name: str) -> ToolDef:
        found = self.candidates(name)
        if not found:
            found = self.candidates(name, force_check=True)  # a miss re-reads before giving up
        if not found and self.providers and self._provided(name, fresh=True):
            return self.memory[name]
        if not found:
            raise self.not_found(name)
        winner = found[0]
        if isinstance(winner, Broken):
            winner.error.skill = winner.error.skill or name
            raise winner.error
        return winner

    def not_found(self, name: str) -> SkillNotFoundError:
        """The error for a name nothing on the path has: a renamed file, a close name, or where to look."""
        hint = (self.renamed_hint(name) or did_you_mean(name, self.all_names())
                or " Run 'agentapps list' to see what is available.")
        return SkillNotFoundError(f"Unknown skill '{name}'.{hint}", skill=name)

    def renamed_hint(self, name: str) -> str:
        """' /p/x.skill.py declares the name 'y' ...' when a skill file is named after `name` but its
        frontmatter names it otherwise (a skill is found by its `name`, never by its file name)."""
        for index in self._indexes:
            for declared, paths in index.names.items():
                for path in paths:
                    if declared != name and name_from_file(os.path.basename(path),
                                                           os.path.basename(os.path.dirname(path))) == name:
                        return (f" {path} declares the name '{declared}' in its frontmatter: skills are "
                                f"found by that name, not by their file name.")
        return ""

    def all_names(self) -> list[str]:
        names = {k for k in self.memory if "://" not in k}
        for index in self._indexes:
            index.ensure(force_check=False, interval=self.check_interval)
            names.update(index.all_names())
        return sorted(names)

    def declared_env(self) -> set[str]:
        """Every variable any skill on the search path declares in `metadata.env` (decodes none)."""
        found: set[str] = set()
        for index in self._indexes:
            index.ensure(force_check=False, interval=self.check_interval)
            found |= index.env_names()
        return found

    def list_all(self, *, provided: bool = True) -> tuple[list[ToolDef], list[SkillLoadError]]:
        """Winners in name order, and the load problems met on the way (never fatal here).
        `provided=False` leaves out tools providers have not registered yet (no server starts)."""
        if self.reads is not None:
            self.reads.add(EVERYTHING)
        if provided and self.providers:
            self._provided(None)
        for index in self._indexes:
            index.ensure(force_check=False, interval=self.check_interval)
        key = (self._generation(), provided, self._memory_version)
        if self._listed is not None and self._listed[0] == key:  # nothing changed since the last listing
            return list(self._listed[1]), list(self._listed[2])
        winners_, problems_ = self._list_all()
        self._listed = (key, winners_, problems_)
        return list(winners_), list(problems_)

    def list_summaries(self) -> tuple[list[dict[str, Any]], list[SkillLoadError]]:
        """What `list` shows of the winners (name, description, kind, source, path, tags, hidden),
        in name order, and the load problems: read from the index, decoding only broken files."""
        from agentapps.tools.catalog import summary

        if self.providers:
            self._provided(None)
        for index in self._indexes:  # a file edited in place is listed as it is within a minute
            index.ensure(force_check=not index.listing_fresh(), interval=self.check_interval)
        key = (self._generation(), self._memory_version)
        done = self._summarised
        if done is not None and done[0] == key and not self.providers:  # (a provider's problems change)
            return list(done[1]), list(done[2])
        rows: dict[str, dict[str, Any]] = {}
        taken: set[str] = set()
        problems: list[SkillLoadError] = []
        for name, tool in self.memory.items():
            if "://" not in name:
                rows[name] = summary(tool)
        for index in self._indexes:
            listing = index.listing()
            if listing is not None:  # every file once, none broken: the rows as the cache keeps them
                for row in listing:
                    name = row["name"]
                    if name not in taken:
                        taken.add(name)
                        if name not in rows:
                            rows[name] = row
                continue
            files, shown, source = index.files, index.summaries(), index.entry.kind
            for name, paths in index.names.items():
                path = paths[0]
                first = files[path]
                if len(paths) > 1:
                    problems += [broken.error for p in paths if files[p].kind == "broken"
                                 and isinstance(broken := index.item(p), Broken)]
                    problems.append(SkillLoadError(f"Two skills are named '{name}': {' and '.join(paths)}.", file=path))
                elif first.kind == "broken" and isinstance(broken := index.item(path), Broken):
                    problems.append(broken.error)
                if name in taken:
                    continue
                taken.add(name)
                if name not in rows and first.kind != "broken":
                    description, tags, hidden = shown.get(path) or index.summary(path)
                    rows[name] = {"name": name, "description": description, "kind": first.kind,
                                  "source": source, "path": path, "tags": list(tags), "hidden": hidden}
        for provider in self.providers:
            problems += [SkillLoadError(text) for text in provider.problems()]
        listed = [rows[n] for n in sorted(rows)]
        self._summarised = (key, listed, problems)
        return list(listed), list(problems)

    def _list_all(self) -> tuple[list[ToolDef], list[SkillLoadError]]:
        winners: dict[str, ToolDef] = {}
        taken: set[str] = set()
        problems: list[SkillLoadError] = []
        for name, tool in self.memory.items():
            if "://" not in name:
                winners[name] = tool
        for index in self._indexes:
            index.ensure(force_check=False, interval=self.check_interval)
            for name, items in index.by_name.items():
                for item in items:
                    if isinstance(item, Broken):
                        problems.append(item.error)
                if len(items) > 1:
                    files = " and ".join(str(i.path) for i in items)
                    problems.append(
                        SkillLoadError(f"Two skills are named '{name}': {files}.", file=items[0].path)
                    )
                if name not in winners and name not in taken and isinstance(items[0], ToolDef):
                    winners[name] = items[0]
                taken.add(name)
        for provider in self.providers:
            problems += [SkillLoadError(text) for text in provider.problems()]
        return [winners[n] for n in sorted(winners)], problems


def _seen(item: ToolDef | Broken, found: list[ToolDef | Broken]) -> bool:
    """Whether the same file was found through an earlier root (a `paths` entry inside the project,
    which is scanned too): it is one definition, not one shadowing itself."""
    return item.path is not None and any(other.path == item.path for other in found)
