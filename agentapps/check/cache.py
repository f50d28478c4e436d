"""What `check` found in each skill last time, kept beside the on-disk index, so an unchanged skill is
not checked again.

A skill's findings are reused only when nothing they were made from changed:

- the world of the check (`world()`): the checker's own code and version, the folder findings are
  shown from, the `AGENTAPPS_*` environment, the project's main skill (its metadata cascades into
  every project skill), and which skill files exist where with which names, on every root of the
  search path (so adding, removing, renaming or shadowing a skill checks every skill again);
- the skill's own file (mtime and size, as the index keeps them);
- every skill its check looked up (`Lookup.reads`: `$inherit` parents, `default`, directive and
  middleware skills), closed over their own `$inherit` parents, by the files that win that name
  now (path, mtime, size). A change to a parent's metadata so checks its children again.

A skill whose check read everything (a listing, tags, a bundled skill it shadows, an MCP server's
cached tool list, a `model.script` file) is not kept: it is checked every time. The cache is an
optimisation only: a file that is missing, unreadable or not in this shape is ignored and
rewritten; `AGENTAPPS_CACHE_DIR=off` turns it off with the index cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentapps.cascade.resolve import parents_of
from agentapps.check.findings import Finding
from agentapps.check.scope import Scope
from agentapps.errors import AgentAppsError
from agentapps.tools.lookup import EVERYTHING
from agentapps.types import ToolDef
from agentapps.version import __version__

VERSION = 2
RACY_NS = 2_000_000_000  # a file written this recently may change again within its mtime's tick
ENV_PREFIXES = ("AGENTAPPS_", "AGENT_APPS_")
Sig = list[list[Any]]  # the files that win a name: [path, mtime, size] each
Adds = list[tuple[Finding, str, bool]]  # SettingsMemo.add calls: finding, skill, own


def _code_stamp() -> list[Any]:
    """The checker's code: every module of agentapps (an edited rule must not reuse old findings)."""
    package = Path(__file__).resolve().parent.parent
    stamps: list[Any] = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                stamps.append([name, st.st_mtime_ns, st.st_size])
    return stamps


def _stat(path: Path | None) -> list[Any] | None:
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        return None
    return None if st is None else [str(path), st.st_mtime_ns, st.st_size]


def world(scope: Scope) -> str:
    """A digest of everything every skill's findings may depend on (see the module doc)."""
    indexes = [*scope.lookup.indexes, scope.bundled]
    for index in indexes:  # a root not read yet would count as empty
        index.ensure(force_check=False, interval=scope.lookup.check_interval)
    roots = [[str(i.entry.directory), i.entry.kind, sorted((p, e.name, e.kind) for p, e in i.files.items())]
             for i in indexes]
    data = [VERSION, __version__, _code_stamp(), str(scope.cwd), str(scope.project),
            sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)),
            _stat(scope.main.path) if scope.main is not None else None, roots,
            sorted(scope.names()), sorted(scope.unlisted_servers()),
            [str(f.path) for f in scope.files]]
    return hashlib.sha256(json.dumps(data, default=str).encode()).hexdigest()


class CheckCache:
    """The kept findings of one check's skills. On disk: the world digest, the files that won each
    depended-on name (`sigs`), the distinct dependency lists (`depsets`: most skills share one), and
    per skill file `[mtime, size, depset, findings, settings adds]`."""

    def __init__(self, scope: Scope, file: Path | None) -> None:
        self.scope = scope
        self.file = file
        self.world = world(scope)
        self.old: dict[str, Any] = {}
        self.old_sigs: dict[str, Any] = {}  # the files that won each depended-on name then
        self.old_depsets: list[Any] = []
        self.new: dict[str, tuple[int, int, tuple[str, ...], Any, Any]] = {}
        self._same: dict[str, bool] = {}  # whether a name's files are those of `old_sigs`
        self._depset_ok: dict[int, bool] = {}
        self.entries: dict[str, Any] = {}  # path -> the index's Entry (mtime, size) of checked files
        for index in scope.roots:
            self.entries.update(index.files)
        self._sigs: dict[str, Sig] = {}
        # findings made from a file younger than RACY_NS are not kept: a second write within the
        # clock tick of the first, of the same size, would leave the same stamp
        self.racy_after = time.time_ns() - RACY_NS
        main = _stat(scope.main.path) if scope.main is not None else None
        self.keeps = main is None or main[1] < self.racy_after
        self.hits = self.misses = 0
        if file is not None:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(file.read_bytes())
                if (isinstance(data, dict) and data.get("world") == self.world and isinstance(data.get("skills"), dict)
                        and isinstance(data.get("sigs"), dict) and isinstance(data.get("depsets"), list)):
                    self.old, self.old_sigs, self.old_depsets = data["skills"], data["sigs"], data["depsets"]

    def sig(self, name: str) -> Sig:
        """The files that win `name` now: those of the first root that has it (none: [])."""
        if name not in self._sigs:
            found: Sig = []
            for index in self.scope.lookup.indexes:
                paths = index.names.get(name)
                if paths:
                    found = [[p, index.files[p].mtime, index.files[p].size] for p in paths]
                    break
            self._sigs[name] = found
        return self._sigs[name]

    def same(self, name: str) -> bool:
        """Whether the files that win `name` are those that won it when the findings were kept."""
        if name not in self._same:
            self._same[name] = name in self.old_sigs and self.old_sigs[name] == self.sig(name)
        return self._same[name]

    def _unchanged(self, depset: int) -> bool:
        if depset not in self._depset_ok:
            names = self.old_depsets[depset]
            self._depset_ok[depset] = isinstance(names, list) and all(self.same(str(n)) for n in names)
        return self._depset_ok[depset]

    def get(self, tool: ToolDef, path: str) -> tuple[list[Finding], Adds] | None:
        """The findings kept for `tool` (at `path`, its path as text), when nothing they depend on changed."""
        kept, entry = self.old.get(path), self.entries.get(path)
        try:
            if (entry is None or kept is None or kept[0] != entry.mtime or kept[1] != entry.size
                    or not self._unchanged(kept[2])):
                return None
            findings = [Finding(*f) for f in kept[3]] if kept[3] else []
            adds = [(Finding(*f), skill, bool(own)) for f, skill, own in kept[4]] if kept[4] else []
        except (IndexError, KeyError, TypeError, ValueError, AttributeError):
            return None
        self.new[path] = (entry.mtime, entry.size, tuple(self.old_depsets[kept[2]]), kept[3], kept[4])
        self.hits += 1
        return findings, adds

    def put(self, tool: ToolDef, reads: set[str], findings: list[Finding], adds: Adds) -> None:
        """Keep what checking `tool` found, unless it read everything."""
        self.misses += 1
        path = str(tool.path)
        entry = self.entries.get(path)
        if entry is None or EVERYTHING in reads or not self.keeps or entry.mtime >= self.racy_after:
            return
        deps = tuple(sorted(self._closure(reads)))
        if any(row[1] >= self.racy_after for name in deps for row in self.sig(name)):
            return
        self.new[path] = (entry.mtime, entry.size, deps, [_row(f) for f in findings],
                          [[_row(f), skill, own] for f, skill, own in adds])

    def _closure(self, names: Iterable[str]) -> set[str]:
        """`names` and the `$inherit` parents of what they find, transitively: a memo of the check
        (an interface found through a parent) may hide a lookup this skill's findings rest on."""
        lookup, seen, todo = self.scope.lookup, set[str](), list(names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            try:
                todo += [str(p) for p in parents_of(lookup.find(name).metadata) or ()]
            except AgentAppsError:
                continue
        return seen

    def save(self) -> None:
        if self.file is None or (self.misses == 0 and self.new.keys() == self.old.keys()):
            return
        depsets: dict[tuple[str, ...], int] = {}
        skills = {path: [mtime, size, depsets.setdefault(deps, len(depsets)), findings, adds]
                  for path, (mtime, size, deps, findings, adds) in self.new.items()}
        names = sorted({name for deps in depsets for name in deps})
        data = {"world": self.world, "sigs": {name: self.sig(name) for name in names},
                "depsets": [list(deps) for deps in depsets], "skills": skills}
        tmp = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, self.file)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()


def _row(f: Finding) -> list[Any]:
    return [f.path, f.line, f.severity, f.code, f.message]


def kept_file(cwd: Path, paths: Iterable[Path] = ()) -> Path | None:
    """Where the findings of a check from `cwd` of `paths` are kept (None: caching is off)."""
    from agentapps.tools.bytecode import cache_base

    base = cache_base()
    key = json.dumps([str(cwd), sorted(str(p) for p in paths)])
    return None if base is None else base / f"check-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def open_cache(scope: Scope, paths: Iterable[Path]) -> CheckCache:
    """The kept findings of this check (of this folder and these paths), or a cache that keeps
    nothing when caching is off."""
    return CheckCache(scope, kept_file(scope.cwd, paths))
