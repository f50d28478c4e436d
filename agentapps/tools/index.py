"""The name index of one search-path root: scan, cache, and refresh when files change."""

from __future__ import annotations

import fnmatch
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentapps.errors import SkillLoadError
from agentapps.tools import index_cache
from agentapps.tools.loader import load_file
from agentapps.tools.names import is_skill_file, name_from_file
from agentapps.types import PathEntry, ToolDef

SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "dist", "build", "venv", "site-packages"})


@dataclass
class Broken:
    """A skill file that failed to load, indexed under the name its file suggests."""

    name: str
    path: Path
    error: SkillLoadError


@dataclass
class RootIndex:
    entry: PathEntry
    by_name: dict[str, list[ToolDef | Broken]] = field(default_factory=dict)
    dir_mtimes: dict[str, int] = field(default_factory=dict)
    files: dict[str, tuple[int, int, ToolDef | Broken]] = field(default_factory=dict)
    checked_at: float = -1.0
    scanned: bool = False
    generation: int = 0

    def _walk(self) -> tuple[list[str], dict[str, int]]:
        found: list[str] = []
        mtimes: dict[str, int] = {}
        top = str(self.entry.directory)
        stack: list[tuple[str, int]] = [(top, 0)]
        while stack:
            directory, depth = stack.pop()
            try:
                mtimes[directory] = os.stat(directory).st_mtime_ns
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        if self._skip_dir(e.name, e.path, depth):
                            continue
                        stack.append((e.path, depth + 1))
                    elif is_skill_file(e.name) and e.is_file():
                        found.append(e.path)
                except OSError:
                    continue
        return sorted(found), mtimes

    def _skip_dir(self, name: str, path: str, depth: int) -> bool:
        if not self.entry.recursive:
            return True
        if self.entry.max_depth is not None and depth + 1 > self.entry.max_depth:
            return True
        if name.startswith(".") or name in SKIPPED_DIRS:
            return True
        if self.entry.ignore:
            rel = os.path.relpath(path, self.entry.directory)
            return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) for pat in self.entry.ignore)
        return False

    def _load(self, path: str) -> ToolDef | Broken:
        p = Path(path)
        try:
            return load_file(p, root=self.entry.directory, root_kind=self.entry.kind)
        except SkillLoadError as exc:
            return Broken(name_from_file(p.name, p.parent.name), p, exc)

    def scan(self) -> None:
        paths, mtimes = self._walk()
        known = self.files or index_cache.load(self.entry.directory, self.entry.kind)
        files: dict[str, tuple[int, int, ToolDef | Broken]] = {}
        changed = len(known) != len(paths)
        for path in paths:
            try:
                st = os.stat(path)
            except OSError:
                continue
            old = known.get(path)
            if old is not None and old[0] == st.st_mtime_ns and old[1] == st.st_size:
                files[path] = old
            else:
                files[path] = (st.st_mtime_ns, st.st_size, self._load(path))
                changed = True
        if changed:
            index_cache.save(self.entry.directory, files)
        by_name: dict[str, list[ToolDef | Broken]] = {}
        for _, _, item in files.values():
            by_name.setdefault(item.name, []).append(item)
        self.files, self.dir_mtimes, self.by_name = files, mtimes, by_name
        self.scanned = True
        self.generation += 1
        self.checked_at = time.monotonic()

    def stale(self) -> bool:
        for directory, mtime in self.dir_mtimes.items():
            try:
                if os.stat(directory).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False

    def ensure(self, *, force_check: bool, interval: float) -> None:
        """Scan on first use; re-check directory times when asked or when `interval` has passed."""
        if not self.scanned:
            self.scan()
            return
        now = time.monotonic()
        if force_check or now - self.checked_at >= interval:
            self.checked_at = now
            if self.stale():
                self.scan()

    def get(self, name: str) -> list[ToolDef | Broken]:
        items = self.by_name.get(name, [])
        fresh: list[ToolDef | Broken] = []
        changed = False
        for item in items:
            path = str(item.path)
            try:
                st = os.stat(path)
            except OSError:
                changed = True
                continue
            cached = self.files.get(path)
            if cached is None or cached[0] != st.st_mtime_ns or cached[1] != st.st_size:
                changed = True
                continue
            fresh.append(item)
        if changed:
            self.scan()
            return self.by_name.get(name, [])
        return fresh

    def names(self) -> list[str]:
        return list(self.by_name)
