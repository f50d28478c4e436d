"""A per-root cache of parsed skill files on disk (SQLite), so a new process need not re-read, nor
even decode, every frontmatter.

It holds each file's path, mtime, size, skill name, kind and declared `metadata.env` names (the
manifest: one JSON value of parallel lists), what `list` shows of it (the listing: one JSON array
of the very objects `list` returns, read only by listing) and, one row per file, its parsed
definition as JSON with the same small columns, indexed by name. A process that trusts the cache looks up only the names it is asked
for, knows every declared secret from one value kept whole, reads the manifest only when something
needs every file (listing, checking, a rescan), and decodes a definition only when that skill is
asked for, so a project of 10 000 skills costs about what one of 1 000 does. Anything that does not round-trip
through JSON exactly is not cached. The cache is an optimisation only: a file that is missing,
unreadable, not a database of this version and root, or holding a row not in the shape this module
writes is ignored (a bad row is re-read from its skill file) and rewritten. `AGENTAPPS_CACHE_DIR`
moves it (default `$XDG_CACHE_HOME/agentapps` or `~/.cache/agentapps`); `AGENTAPPS_CACHE_DIR=off`
disables it. A save writes a new file and renames it over the old one, so readers never see half.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import weakref
import zlib
from functools import partial
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

try:  # the C module itself: the `sqlite3` package also imports datetime for adapters we never use
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - an interpreter without the C module
    import sqlite3  # type: ignore[no-redef]

from agentapps.errors import SkillLoadError
from agentapps.tools.loopwaits import STAMP
from agentapps.types import RootKind, ToolDef

VERSION = f"13-{STAMP}"  # the rows keep which skills need an event loop: new rules, a new index (13: the listing)
# `files` also holds each file's small columns, indexed by name: a run that asks for a few skills
# looks them up there and never reads the whole manifest (see Manifest.named).
SCHEMA = ("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
          "CREATE TABLE files (path TEXT PRIMARY KEY, data TEXT NOT NULL, name TEXT NOT NULL, mtime INTEGER "
          "NOT NULL, size INTEGER NOT NULL, env TEXT NOT NULL, kind TEXT NOT NULL);"
          "CREATE INDEX files_by_name ON files (name)")
# The small columns of every file, in one JSON value of parallel lists (`meta.manifest`): a process
# reads all of them, and one json.loads of five lists is far cheaper than a row object per file.
# What listing shows is a second value (`meta.listing`): one object per file, in path order, with
# exactly the keys of a row of `list` (a broken file's kind is "broken"). json.loads makes those
# objects in C, so `list` at 50 000 skills builds no row in Python (Lookup.list_summaries).
COLUMNS = ("paths", "mtimes", "sizes", "names", "env", "kinds")
LISTING_KEYS = ("name", "description", "kind", "source", "path", "tags", "hidden")
KINDS = frozenset({"markdown", "code", "broken"})


class Entry(NamedTuple):
    """What the index keeps of one skill file without decoding it: what identifies its version
    (mtime, size), its name, the `metadata.env` names it declares (one per line) and its kind."""

    mtime: int
    size: int
    name: str
    env: str
    kind: str

    def env_names(self) -> tuple[str, ...]:
        return tuple(self.env.split("\n")) if self.env else ()


Summary = tuple[str, tuple[str, ...], bool]  # what `list` shows: description, tags, hidden
_entry = partial(tuple.__new__, Entry)  # an Entry from a 5-tuple, called from C (no frame per file)


def cache_path(root: Path) -> Path | None:
    from agentapps.tools.bytecode import cache_base

    base = cache_base()
    if base is None or not utf8(str(root)):
        return None  # SQLite keeps text as UTF-8: a root whose name is not (HOME=$'/h\xff') is not cached
    digest = zlib.crc32(str(root).encode())  # the file also records its root, so a clash is harmless
    return base / f"index-{digest:08x}.db"


def utf8(text: str) -> bool:
    """Whether `text` can be stored as it is: a file name with bytes that are not UTF-8 comes back
    from the OS holding lone surrogates (surrogateescape), which SQLite cannot keep."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def entry_of(mtime: int, size: int, item: Any) -> Entry:
    """The manifest entry of a definition just loaded from its file."""
    if not isinstance(item, ToolDef):
        return Entry(mtime, size, item.name, "", "broken")
    return Entry(mtime, size, item.name, "\n".join(env_names(item)), item.kind)


def summary_of(item: Any) -> Summary:
    """What `list` shows of a definition; hidden from it without `--all`: a hidden skill, and the
    pipeline's middleware (a user never runs one; `describe` shows a skill's chain)."""
    if not isinstance(item, ToolDef):
        return "", (), False
    return item.description, item.tags, item.hidden or item.metadata.get("role") == "middleware"


def env_names(item: Any) -> tuple[str, ...]:
    """The `metadata.env` names a definition declares (a string is one name)."""
    if not isinstance(item, ToolDef):
        return ()
    env = item.metadata.get("env")
    if isinstance(env, str):
        return (env,)
    return tuple(str(e) for e in env) if isinstance(env, list) else ()


def encode(item: Any) -> str | None:
    from agentapps.tools.index import Broken

    if isinstance(item, Broken):
        e = item.error
        data: dict[str, Any] = {"broken": item.name, "path": str(item.path), "message": e.message, "line": e.line}
    else:
        tool: ToolDef = item
        data = {"name": tool.name, "kind": tool.kind, "frontmatter": tool.frontmatter, "path": str(tool.path),
                "body": tool.body, "body_line": tool.body_line, "uri": tool.uri, "mtime": tool.mtime_ns,
                "loop": tool.loop}
    try:
        text = json.dumps(data)
        return text if json.loads(text) == data else None  # e.g. YAML dates: don't cache
    except (TypeError, ValueError):
        return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _well_formed(path: str, data: Any) -> bool:
    """Is `data` exactly the shape `encode` writes for `path`? (A hand-edited or damaged row is not.)"""
    if not isinstance(data, dict) or data.get("path") != path:
        return False
    if "broken" in data:
        return (isinstance(data["broken"], str) and isinstance(data.get("message"), str)
                and (data.get("line") is None or _is_int(data.get("line"))))
    front = data.get("frontmatter")
    return (isinstance(data.get("name"), str) and data.get("kind") in ("markdown", "code")
            and isinstance(front, dict) and isinstance(front.get("metadata", {}), dict)
            and isinstance(data.get("body"), str) and _is_int(data.get("body_line"))
            and (data.get("uri") is None or isinstance(data.get("uri"), str)) and _is_int(data.get("mtime"))
            and isinstance(data.get("loop"), bool))




class Manifest:
    """One root's cache, open for reading: every row's small columns, definitions on demand, the
    folders' mtimes when it was written, and when every file was last stat-ed against it."""

    def __init__(self, conn: Any, root: Path, kind: RootKind, dirs: dict[str, int], verified_ns: int,
                 env: str) -> None:
        self.conn, self.root, self.kind = conn, root, kind
        # a manifest dropped with its index (an embedding program's Globals, a test's) closes its
        # connection; left to the collector, a cycle may finalize the connection first and Python
        # 3.13 warns of it unclosed. A finalizer holds the connection, so it is closed before that
        weakref.finalize(self, _close_quietly, conn)
        self.dirs, self.verified_ns, self.env = dirs, verified_ns, env
        self._rows: dict[str, Entry] | None = None
        self._listing: list[dict[str, Any]] | None = None  # [] once found missing or damaged
        self.damaged = False  # the manifest was out of shape when read: its rows are {}

    @property
    def rows(self) -> dict[str, Entry]:
        """Every file's small columns by path (one json.loads of the manifest, on first use; {} when
        it is damaged, so every file is read again and the cache rewritten)."""
        if self._rows is None:
            found = _manifest_rows(self.conn)
            self.damaged = found is None
            self._rows = found or {}
        return self._rows

    def entry(self, path: str) -> Entry | None:
        """One file's small columns, from the indexed columns (no manifest read)."""
        try:
            found = self.conn.execute("SELECT mtime, size, name, env, kind FROM files WHERE path = ?",
                                      (path,)).fetchone()
        except (sqlite3.Error, UnicodeEncodeError):  # a name not UTF-8: never a row
            return None
        if found is None:
            return None
        mtime, size, name, env, kind = found
        if not (_is_int(mtime) and _is_int(size) and isinstance(name, str) and isinstance(env, str) and kind in KINDS):
            return None
        return Entry(mtime, size, name, env, kind)

    def named(self, name: str) -> list[tuple[str, Entry]] | None:
        """The files that declare `name`, in path order, from the indexed columns (no manifest
        read); None when the rows are not in the shape `save` writes."""
        try:
            found = self.conn.execute("SELECT path, mtime, size, env, kind FROM files WHERE name = ? ORDER BY path",
                                      (name,)).fetchall()
        except (sqlite3.Error, UnicodeEncodeError):
            return None
        rows = []
        for path, mtime, size, env, kind in found:
            if not (isinstance(path, str) and _is_int(mtime) and _is_int(size) and isinstance(env, str)
                    and kind in KINDS):
                return None
            rows.append((path, Entry(mtime, size, name, env, kind)))
        return rows

    def declared_env(self) -> set[str]:
        """Every `metadata.env` name any file of this root declares (kept whole at save)."""
        return set(self.env.split("\n")) - {""}

    def listing(self) -> list[dict[str, Any]] | None:
        """What `list` shows of every file: one object per file in path order, each with exactly
        LISTING_KEYS (a broken file's kind is "broken"); None when the value is missing or out of
        shape (the caller then works from the rows and the definitions)."""
        if self._listing is None:
            self._listing = _listing_of(self.conn, self.kind) or []
        return self._listing or None

    def summaries(self) -> dict[str, Summary]:
        """What `list` shows of every file, by path; {} when the listing is missing or damaged (the
        caller then decodes the definitions)."""
        return {row["path"]: (row["description"], tuple(row["tags"]), row["hidden"]) for row in self.listing() or ()}

    def trusted(self) -> bool:
        """Whether this process may use the rows without walking the folders or a stat of every
        file: every folder it knew has the mtime it had (a file or folder added, removed or
        renamed anywhere changes its folder's). A file edited in place changes no folder: the
        skills a run asks for are stat-ed themselves; `which`, `check` and a miss stat every file,
        and `list` does when every file was last checked more than LIST_CHECK_SECONDS ago."""
        if os.environ.get("AGENTAPPS_INDEX_TRUST") == "off" or not self.dirs:
            return False
        try:
            return all(os.stat(d).st_mtime_ns == m for d, m in self.dirs.items())
        except OSError:
            return False

    def raw_all(self) -> dict[str, str]:
        """Every row's JSON as stored (to write unchanged rows again without decoding them)."""
        try:
            return {p: d for p, d in self.conn.execute("SELECT path, data FROM files") if isinstance(d, str)}
        except sqlite3.Error:
            return {}

    def raw(self, path: str) -> str | None:
        try:
            found = self.conn.execute("SELECT data FROM files WHERE path = ?", (path,)).fetchone()
        except (sqlite3.Error, UnicodeEncodeError):
            return None
        return found[0] if found and isinstance(found[0], str) else None

    def item(self, path: str) -> Any:
        """The cached definition of `path`, or None when its row is damaged (re-read the file)."""
        return self.decode(path, self.raw(path))

    def items(self) -> dict[str, Any]:
        """Every cached definition at once (what listing and checking need): one query, and one
        json.loads of all the rows joined into an array (far cheaper than one call per row)."""
        try:
            rows = [(p, d) for p, d in self.conn.execute("SELECT path, data FROM files") if isinstance(d, str)]
            decoded = json.loads("[" + ",".join(d for _, d in rows) + "]")
        except (sqlite3.Error, ValueError, RecursionError):
            return {p: self.decode(p, self.raw(p)) for p in self.rows}  # one damaged row: row by row
        return {p: self.build(p, data) for (p, _), data in zip(rows, decoded, strict=True)}

    def decode(self, path: str, text: Any) -> Any:
        if not isinstance(text, str):
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        return self.build(path, data)

    def build(self, path: str, data: Any) -> Any:
        """The definition a decoded row describes, or None when it is not in the shape `encode` writes."""
        from agentapps.tools.index import Broken

        if not isinstance(data, dict) or not _well_formed(path, data):
            return None
        if "broken" in data:
            p = Path(data["path"])
            return Broken(data["broken"], p, SkillLoadError(data["message"], file=p, line=data.get("line")))
        return ToolDef(data["name"], data["kind"], data["frontmatter"], Path(data["path"]), data["body"],
                       data["body_line"], None, data.get("uri"), self.root, self.kind, data["mtime"], data["loop"])

    def close(self) -> None:
        _close_quietly(self.conn)


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(sqlite3.Error):
        conn.close()


def open_manifest(root: Path, kind: RootKind) -> Manifest | None:
    """The cache of `root`, or None (so it is rebuilt and rewritten) when there is no usable one.
    The rows are read when first needed (Manifest.rows, Manifest.named)."""
    path = cache_path(root)
    if path is None or not path.is_file():
        return None
    conn = None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        meta = dict(conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('version', 'root', 'dirs', 'verified', 'env')").fetchall())
        if meta.get("version") != str(VERSION) or meta.get("root") != str(root) or not isinstance(meta.get("env"), str):
            conn.close()
            return None
        dirs = json.loads(meta.get("dirs", "{}"))
        verified = int(meta.get("verified", "0"))
        if not (isinstance(dirs, dict) and all(isinstance(k, str) and _is_int(v) for k, v in dirs.items())):
            dirs = {}
    except (sqlite3.Error, KeyError, ValueError, TypeError, RecursionError):
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        return None
    return Manifest(conn, root, kind, dirs, verified, meta["env"])


def _manifest_rows(conn: Any) -> dict[str, Entry] | None:
    """The manifest's parallel lists as Entries by path; None when any value is out of shape."""
    try:
        found = conn.execute("SELECT value FROM meta WHERE key = 'manifest'").fetchone()
        manifest = json.loads(found[0]) if found else None
        columns = [manifest[c] for c in COLUMNS] if isinstance(manifest, dict) else None
    except (sqlite3.Error, KeyError, ValueError, TypeError, RecursionError):
        return None
    if not (columns and all(isinstance(c, list) for c in columns) and len({len(c) for c in columns}) == 1):
        return None
    paths, mtimes, sizes, names, envs, kinds = columns
    # every value's type checked by C loops, and each Entry made from C (no Python call per file)
    if not (set(map(type, paths)) <= {str} and set(map(type, mtimes)) <= {int}
            and set(map(type, sizes)) <= {int} and set(map(type, names)) <= {str}
            and set(map(type, envs)) <= {str} and set(kinds) <= KINDS):
        return None
    return dict(zip(paths, map(_entry, zip(mtimes, sizes, names, envs, kinds, strict=True)), strict=True))


def _listing_of(conn: Any, kind: RootKind) -> list[dict[str, Any]] | None:
    """The listing as `save` wrote it for a root of this kind; None when any part is out of shape."""
    try:
        found = conn.execute("SELECT value FROM meta WHERE key = 'listing'").fetchone()
        rows = json.loads(found[0]) if found else None
        if not isinstance(rows, list) or set(map(type, rows)) - {dict} or set(map(len, rows)) - {len(LISTING_KEYS)}:
            return None
        names, texts, kinds, sources, paths, tags, hidden = (list(map(itemgetter(k), rows)) for k in LISTING_KEYS)
    except (sqlite3.Error, ValueError, TypeError, KeyError, RecursionError):
        return None
    # every value's type checked by C loops (no Python call per file)
    if not (set(map(type, names)) <= {str} and set(map(type, texts)) <= {str} and set(kinds) <= KINDS
            and set(sources) <= {kind} and set(map(type, paths)) <= {str} and set(map(type, tags)) <= {list}
            and set(map(type, chain.from_iterable(tags))) <= {str} and set(map(type, hidden)) <= {bool}):
        return None
    return rows


def save(root: Path, kind: RootKind, rows: list[tuple[str, Entry, Summary, str]], dirs: dict[str, int]) -> None:
    """Write the cache of `root` (a root of this kind) anew: (path, entry, summary, encoded
    definition) per file, and the folders' mtimes, all just checked against the files."""
    path = cache_path(root)
    if path is None or not all(utf8(p) for p, _, _, _ in rows):
        return  # a file name that is not UTF-8 cannot be a row: no cache, so every run reads the folder
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        conn = sqlite3.connect(str(tmp))
        try:
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("PRAGMA synchronous=OFF")  # rebuilt from the skill files if ever lost
            for statement in SCHEMA.split(";"):
                conn.execute(statement)
            paths = [p for p, _, _, _ in rows]
            entries = [e for _, e, _, _ in rows]
            manifest = {"paths": paths, **{c: [e[i] for e in entries] for i, c in enumerate(COLUMNS[1:])}}
            listing = [{"name": e.name, "description": s[0], "kind": e.kind, "source": kind, "path": p,
                        "tags": list(s[1]), "hidden": s[2]} for p, e, s, _ in rows]
            env = sorted({n for e in entries if e.env for n in e.env.split("\n")})
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("version", str(VERSION)), ("root", str(root)), ("manifest", json.dumps(manifest)),
                ("listing", json.dumps(listing)), ("dirs", json.dumps(dirs)), ("verified", str(time.time_ns())),
                ("env", "\n".join(env))])
            conn.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(p, text, e.name, e.mtime, e.size, e.env, e.kind) for p, e, _, text in rows])
            conn.commit()
        finally:
            conn.close()
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except (OSError, sqlite3.Error):
        with contextlib.suppress(OSError):
            tmp.unlink()  # a read-only home is fine: the cache is only an optimisation


LIST_CHECK_SECONDS = 60.0  # how long `list` trusts the last check of every file (see SkillIndex.listing_fresh)


def mark_verified(root: Path) -> None:
    """Record that every file of `root` was just checked against its cache."""
    path = cache_path(root)
    if path is None:
        return
    try:
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0.2)
        try:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'verified'", (str(time.time_ns()),))
            conn.commit()
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # busy or read-only: the next check of every file tries again
