"""The name index of one search-path root: scan, cache, and refresh when files change."""

from __future__ import annotations

import os
import time
from operator import itemgetter
from pathlib import Path
from typing import Any

from agentapps.core.shown import fields_repr
from agentapps.errors import SkillLoadError
from agentapps.tools import index_cache
from agentapps.tools.index_cache import Entry, Summary, entry_of, summary_of
from agentapps.tools.loader import load_file
from agentapps.tools.names import is_skill_file, name_from_file
from agentapps.types import PathEntry, ToolDef

SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "dist", "build", "venv", "site-packages"})
# A folder below a root holding one of these is not part of it: `.agent-apps/` makes it a project
# of its own (run there, it is one), and the marker file is in the bundled skills folder.
BOUNDARIES = frozenset({".agent-apps", ".agentapps-bundled"})
# The mtime noted for a root that does not exist (most skills folders on the search path don't):
# it stays fresh while the folder is missing and goes stale when it appears.
MISSING = -1


class Broken:
    """A skill file that failed to load, indexed under the name its file suggests."""

    FIELDS = ("name", "path", "error")
    __slots__ = FIELDS
    name: str
    path: Path
    error: SkillLoadError

    def __init__(self, name: str, path: Path, error: SkillLoadError) -> None:
        self.name, self.path, self.error = name, path, error

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


_LISTED_NAME, _LISTED_KIND = itemgetter("name"), itemgetter("kind")


def _listed(row: dict[str, Any], item: ToolDef | Broken) -> dict[str, Any]:
    description, tags, hidden = summary_of(item)
    return {**row, "description": description, "tags": list(tags), "hidden": hidden}


def _by_name(files: dict[str, Entry]) -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for path, entry in files.items():
        names.setdefault(entry.name, []).append(path)
    return names


class RootIndex:
    """The index of one search-path root: its skill files by name, and the folders' mtimes."""

    FIELDS = ("entry", "names", "dir_mtimes", "files", "defs", "checked_at", "scanned", "generation", "_manifest",
              "_summaries", "verified")
    # `names` and `files` are properties over `_names` and `_files`: while `_lazy`, a new process
    # that trusts the on-disk cache holds only the names it was asked for (Manifest.named), and
    # reads every row the first time something needs all of them
    __slots__ = ("_files", "_lazy", "_manifest", "_names", "_summaries", "checked_at", "defs", "dir_mtimes", "entry",
                 "generation", "scanned", "verified")
    entry: PathEntry
    _names: dict[str, list[str]]  # skill name -> paths, in path order
    dir_mtimes: dict[str, int]
    _files: dict[str, Entry]
    defs: dict[str, ToolDef | Broken]  # decoded or loaded, by path
    checked_at: float
    scanned: bool
    generation: int
    _manifest: index_cache.Manifest | None
    _summaries: dict[str, Summary] | None
    verified: bool  # every file was stat-ed by this process (not only trusted from the cache)

    def __init__(self, entry: PathEntry, names: dict[str, list[str]] | None = None,
                 dir_mtimes: dict[str, int] | None = None, files: dict[str, Entry] | None = None,
                 defs: dict[str, ToolDef | Broken] | None = None, checked_at: float = -1.0, scanned: bool = False,
                 generation: int = 0, _manifest: index_cache.Manifest | None = None,
                 _summaries: dict[str, Summary] | None = None, verified: bool = False) -> None:
        self.entry = entry
        self._names = {} if names is None else names
        self.dir_mtimes = {} if dir_mtimes is None else dir_mtimes
        self._files = {} if files is None else files
        self._lazy = False
        self.defs = {} if defs is None else defs
        self.checked_at, self.scanned, self.generation = checked_at, scanned, generation
        self._manifest, self._summaries, self.verified = _manifest, _summaries, verified

    def __repr__(self) -> str:  # the manifest and summaries are left out, as they always were
        return fields_repr(self, ("entry", "names", "dir_mtimes", "files", "defs", "checked_at", "scanned",
                                  "generation", "verified"))

    @property
    def names(self) -> dict[str, list[str]]:
        """Every skill name of this root -> its files' paths, in path order."""
        if self._lazy:
            self._materialize()
        return self._names

    @property
    def files(self) -> dict[str, Entry]:
        """Every skill file of this root -> what the index keeps of it."""
        if self._lazy:
            self._materialize()
        return self._files

    def _walk(self) -> tuple[list[str], dict[str, int]]:
        found: list[str] = []
        mtimes: dict[str, int] = {}
        top = str(self.entry.directory)
        stack: list[tuple[str, int]] = [(top, 0)]
        while stack:
            directory, depth = stack.pop()
            try:
                mtimes[directory] = os.stat(directory).st_mtime_ns
            except FileNotFoundError:
                if directory == top:
                    mtimes[top] = MISSING
                continue
            except OSError:
                continue
            try:
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            if depth and any(e.name in BOUNDARIES for e in entries):
                continue  # a project of its own, or the bundled skills (a source checkout's skills/)
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
            import fnmatch

            rel = os.path.relpath(path, self.entry.directory)
            return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) for pat in self.entry.ignore)
        return False

    def _load(self, path: str) -> ToolDef | Broken:
        p = Path(path)
        try:
            return load_file(p, root=self.entry.directory, root_kind=self.entry.kind)
        except SkillLoadError as exc:
            return Broken(name_from_file(p.name, p.parent.name), p, exc)

    def scan(self, *, verify: bool = False) -> None:
        """Walk the root and index its skill files. A new process adopts the on-disk cache as it is
        when the same files sit in the same unchanged folders (index_cache.Manifest.trusted); otherwise, or with `verify`, every file is stat-ed and
        the changed ones are read again."""
        if not self._files and not self._lazy and not os.path.exists(self.entry.directory):
            self._adopt(None, {}, {str(self.entry.directory): MISSING}, {}, verified=True)
            return  # nothing to read, nor any cache to open (see `stale`)
        manifest = self._manifest or index_cache.open_manifest(self.entry.directory, self.entry.kind)
        if not verify and not self._lazy and not self._files and manifest is not None and manifest.trusted():
            # a new process, nothing changed: no walk, no stat of the files, and no row read until
            # a name is asked for
            self._adopt_lazy(manifest)
            return
        paths, mtimes = self._walk()
        rows = manifest.rows if manifest is not None else {}
        files: dict[str, Entry] = {}
        defs: dict[str, ToolDef | Broken] = {}
        known, decoded, stat = self.files, self.defs, os.stat  # (50 000 files: the loop is the cost)
        changed = set(paths) != set(known or rows)
        for path in paths:
            try:
                st = stat(path)
            except OSError:
                continue
            old = known.get(path)
            if old is not None and old.mtime == st.st_mtime_ns and old.size == st.st_size:
                files[path] = old
                if path in decoded:
                    defs[path] = decoded[path]
                continue
            row = rows.get(path)
            if row is not None and row.mtime == st.st_mtime_ns and row.size == st.st_size:
                files[path] = row  # decoded when asked for
                continue
            item = defs[path] = self._load(path)
            files[path] = entry_of(st.st_mtime_ns, st.st_size, item)
            changed = True
        self._adopt(manifest, files, mtimes, defs, verified=True)
        if changed:
            self._save()
        elif manifest is not None:  # every file checked and unchanged: say when, for `list`
            index_cache.mark_verified(self.entry.directory)

    def _adopt(self, manifest: index_cache.Manifest | None, files: dict[str, Entry], mtimes: dict[str, int],
               defs: dict[str, ToolDef | Broken], *, verified: bool) -> None:
        if manifest is not self._manifest and self._manifest is not None:
            self._manifest.close()
        self._manifest = manifest
        self._files, self.dir_mtimes, self._names, self.verified = files, mtimes, _by_name(files), verified
        self._lazy = False
        self.defs, self._summaries = defs, None
        self.scanned = True
        self.generation += 1
        self.checked_at = time.monotonic()

    def _adopt_lazy(self, manifest: index_cache.Manifest) -> None:
        if manifest is not self._manifest and self._manifest is not None:
            self._manifest.close()
        self._manifest = manifest
        self._files, self._names, self._lazy = {}, {}, True
        self.dir_mtimes, self.verified = dict(manifest.dirs), False
        self.defs, self._summaries = {}, None
        self.scanned = True
        self.generation += 1
        self.checked_at = time.monotonic()

    def _materialize(self) -> None:
        """Leave the lazy state: every row of the cache (the same files: the generation stays)."""
        self._lazy = False
        manifest = self._manifest
        rows = manifest.rows if manifest is not None else {}
        if manifest is None or manifest.damaged:
            self.scan(verify=True)  # the cache cannot be read whole: walk and check every file
            return
        rows.update(self._files)  # a row found damaged and read from its file meanwhile stays so
        self._files, self._names = rows, _by_name(rows)

    def _paths(self, name: str) -> list[str]:
        if not self._lazy:
            return self._names.get(name, [])
        paths = self._names.get(name)
        if paths is None:
            found = self._manifest.named(name) if self._manifest is not None else None
            if found is None:  # rows out of shape: read them all (or the files themselves)
                self._materialize()
                return self._names.get(name, [])
            paths = self._names[name] = [path for path, _ in found]
            for path, entry in found:
                self._files.setdefault(path, entry)
        return paths

    def _item(self, path: str) -> ToolDef | Broken:
        found = self.defs.get(path)
        if found is None:
            entry = self._files.get(path) or self.files[path]
            found = self._manifest.item(path) if self._manifest is not None else None
            if found is None or found.name != entry.name:  # a damaged row: read the file itself
                found = self._load(path)
                self._files[path] = entry_of(entry.mtime, entry.size, found)
            self.defs[path] = found
        return found

    def summary(self, path: str) -> Summary:
        """What `list` shows of one file (description, tags, hidden), without decoding it."""
        if path in self.defs:
            return summary_of(self.defs[path])
        if self._summaries is None:
            self._summaries = self._manifest.summaries() if self._manifest is not None else {}
        found = self._summaries.get(path)
        return found if found is not None else summary_of(self._item(path))

    def listing(self) -> list[dict[str, Any]] | None:
        """What `list` shows of every file, in path order, as the cache keeps it: only while this
        process trusts the cache (nothing was re-read), and only when no file is broken and no
        name is taken twice; None otherwise (ask `names`, `files` and `summaries`)."""
        if not self._lazy or self._manifest is None:
            return None
        rows = self._manifest.listing()
        if rows is None:
            return None
        names = set(map(_LISTED_NAME, rows))
        if len(names) != len(rows) or "broken" in set(map(_LISTED_KIND, rows)):
            return None
        if self.defs:  # decoded this process (the same version of the file): as it says
            rows = [_listed(row, self.defs[row["path"]]) if row["path"] in self.defs else row for row in rows]
        return rows

    def summaries(self) -> dict[str, Summary]:
        """What `list` shows of every file, by path, from the cache's summaries and the definitions
        this process decoded (those win); a file in neither is left out (ask `summary`)."""
        if self._summaries is None:
            self._summaries = self._manifest.summaries() if self._manifest is not None else {}
        if not self.defs:
            return self._summaries
        return {**self._summaries, **{path: summary_of(item) for path, item in self.defs.items()}}

    def _save(self) -> None:
        raw = self._manifest.raw_all() if self._manifest is not None else {}
        summaries = self._manifest.summaries() if self._manifest is not None else {}
        rows = []
        for path in list(self.files):
            item = self.defs.get(path)
            text = raw.get(path) if item is None else index_cache.encode(item)
            shown = summaries.get(path) if item is None else summary_of(item)
            if text is None or shown is None:
                item = self._item(path)
                text, shown = index_cache.encode(item), summary_of(item)
            if text is not None:
                rows.append((path, self.files[path], shown, text))
        index_cache.save(self.entry.directory, self.entry.kind, rows, self.dir_mtimes)

    def _decode_all(self) -> None:
        if self._manifest is not None and len(self.defs) < len(self.files):
            for path, cached in self._manifest.items().items():
                entry = self.files.get(path)
                if entry is not None and path not in self.defs and cached is not None and cached.name == entry.name:
                    self.defs[path] = cached

    @property
    def by_name(self) -> dict[str, list[ToolDef | Broken]]:
        """Every definition by name (decodes them all: for listing and checking, not for lookups)."""
        self._decode_all()
        return {name: [self._item(p) for p in paths] for name, paths in self.names.items()}

    def items(self) -> list[ToolDef | Broken]:
        self._decode_all()
        return [self._item(p) for p in self.files]

    def entries(self) -> dict[str, list[tuple[str, Entry]]]:
        """(path, entry) by name, without decoding any definition: what listing needs."""
        return {name: [(p, self.files[p]) for p in paths] for name, paths in self.names.items()}

    def item(self, path: str) -> ToolDef | Broken:
        """The definition of one file of this root (decoded on demand)."""
        return self._item(path)

    def env_names(self) -> set[str]:
        """Every variable any skill of this root declares in `metadata.env`, decoding nothing."""
        if self._lazy and self._manifest is not None:
            return self._manifest.declared_env()
        return {name for entry in self._files.values() if entry.env for name in entry.env.split("\n")}

    def listing_fresh(self) -> bool:
        """Whether `list` may show this root without a stat of every file: this process checked
        them, or the cache says every file was checked less than LIST_CHECK_SECONDS ago. (A file
        edited in place changes no folder: `list` shows the edit within that time.)"""
        if self.verified or not self._lazy or self._manifest is None:
            return True
        age = time.time_ns() - self._manifest.verified_ns
        return 0 <= age < index_cache.LIST_CHECK_SECONDS * 1e9

    def stale(self) -> bool:
        for directory, mtime in self.dir_mtimes.items():
            try:
                if os.stat(directory).st_mtime_ns != mtime:
                    return True
            except FileNotFoundError:
                if mtime != MISSING:
                    return True
            except OSError:
                return True
        return False

    def ensure(self, *, force_check: bool, interval: float) -> None:
        """Scan on first use; re-check directory times when asked or when `interval` has passed."""
        if not self.scanned:
            self.scan(verify=force_check)
            return
        now = time.monotonic()
        if force_check and not self.verified:  # the cache was trusted: now check every file
            self.scan(verify=True)
            return
        if force_check or now - self.checked_at >= interval:
            self.checked_at = now
            if self.stale():
                self.scan()

    def get(self, name: str) -> list[ToolDef | Broken]:
        paths = self._paths(name)
        changed = False
        for path in paths:
            try:
                st = os.stat(path)
            except OSError:
                changed = True
                continue
            entry = self._files.get(path)
            if entry is None or entry.mtime != st.st_mtime_ns or entry.size != st.st_size:
                changed = True
        if changed:
            self.scan()
            paths = self.names.get(name, [])
        items = [self._item(p) for p in paths]
        if any(item.name != name for item in items):  # a damaged cache row named it wrongly
            self.scan()
            items = [self._item(p) for p in self.names.get(name, [])]
        return items

    def all_names(self) -> list[str]:
        return list(self.names)
