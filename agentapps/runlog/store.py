"""The run log's SQLite database: its schema, how a connection is set up, appending a record.

WAL journal, so readers never block the writer and concurrent `agentapps run`s queue on a short
busy wait; each record goes in one transaction, so a process killed at any point (kill -9) leaves
the log with or without that record, never torn. `synchronous=OFF`: no fsync per run (with WAL and
synchronous=FULL a one-record commit took 4.0 ms median, 8.0 ms p90, on this machine's virtual disk,
2026-11-27: twice benchmarks/runlog.py's target of 2 ms per record); a crash of agentapps cannot
lose a committed record, an OS crash or power loss can lose the last few. The folder is created
0700 and the files 0600. A damaged database is reported, never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
from pathlib import Path
from typing import Any, Literal

# the C module itself: the `sqlite3` package also imports datetime (2.2-2.3 ms under -X importtime,
# 2026-11-27) for adapters we never use
try:
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - an interpreter without the C module
    import sqlite3  # type: ignore[no-redef]

__all__ = ["Writer", "append", "append_all", "connect", "damaged", "failed", "replace", "sqlite3"]

from agentapps.errors import SkillError, StoreCorruptError, StoreWriteError

SCHEMA_VERSION = 1
BUSY_SECONDS = 10.0
RUN_COLUMNS = ("started_at", "skill", "args_digest", "model", "turns", "steps", "input_tokens",
               "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost", "duration_ms",
               "exit_code", "error", "stop_reason", "session_id")
MODEL_COLUMNS = ("model", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost")
COUNTS = ("turns", "steps", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
USAGE_KEYS = {"input_tokens": "inputTokens", "output_tokens": "outputTokens",
              "cache_read_tokens": "cacheReadInputTokens", "cache_write_tokens": "cacheWriteInputTokens"}
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, started_at REAL NOT NULL, skill TEXT NOT NULL, args_digest TEXT,
  model TEXT, turns INTEGER NOT NULL DEFAULT 0, steps INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL, duration_ms REAL, exit_code INTEGER NOT NULL, error TEXT, stop_reason TEXT,
  session_id TEXT);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at);
CREATE INDEX IF NOT EXISTS runs_skill ON runs (skill, started_at);
CREATE TABLE IF NOT EXISTS run_models (
  run_id INTEGER NOT NULL REFERENCES runs (id), model TEXT NOT NULL,
  input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL, PRIMARY KEY (run_id, model));
"""


def damaged(path: Path, exc: sqlite3.DatabaseError) -> StoreCorruptError:
    return StoreCorruptError(f"The run log {path} is damaged or not a run log ({exc}); move it "
                             "away (the next run starts a new one) or inspect it with sqlite3.",
                             file=path)


SQLITE_IOERR, SQLITE_FULL = 10, 13  # primary result codes: an extended code keeps its low byte
LOW_SPACE = 1 << 20  # an I/O error with less room than this on the log's file system is that


def _full(path: Path, exc: BaseException) -> bool:
    """Whether `exc` comes of a full disk. SQLite says SQLITE_FULL when a write of the database
    finds no room, but a plain I/O error when it cannot size the WAL's shared-memory index (which
    even a reader needs); then the file system itself says whether there is room."""
    if getattr(exc, "errno", None) == errno.ENOSPC:
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int) or code & 0xFF not in (SQLITE_FULL, SQLITE_IOERR):
        return False
    if code & 0xFF == SQLITE_FULL:
        return True
    try:
        room = os.statvfs(path.parent)
    except OSError:
        return False
    return room.f_bavail * room.f_frsize < LOW_SPACE


def failed(path: Path, exc: BaseException, doing: str) -> Exception:
    """What a failed open, read or write of the log is reported as: a full disk says "no space"
    and names the file (SQLite's own words, "database or disk is full" or "disk I/O error", say
    neither), a damaged file is StoreCorruptError, anything else (busy past the wait, read-only)
    is said as it is."""
    if _full(path, exc):
        return StoreWriteError(f"The run log {path} was not {doing}: no space left on device. Free some "
                               "disk space (AGENTAPPS_RUN_LOG=off stops the log).")
    if type(exc) is sqlite3.DatabaseError:
        return damaged(path, exc)  # not a database, malformed
    why = getattr(exc, "strerror", None) or exc
    return SkillError(f"The run log {path} was not {doing}: {why}.")


def connect(path: Path, *, create: bool, shared: bool = False) -> sqlite3.Connection | None:
    """A connection set up for the log; None when it does not exist, or holds no runs yet, and
    `create` is false (a reader never writes: `runs list` works on a full disk). `shared`: usable
    from another thread than the one that opened it (never from two at once: `Writer`)."""
    if not path.exists():
        if not create:
            return None
        try:
            path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # .agent-apps/
            path.parent.mkdir(mode=0o700, exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))  # SQLite keeps these permissions
        except OSError as exc:
            raise failed(path, exc, "written") from None
    conn = None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=not shared)
        conn.execute("PRAGMA synchronous=OFF")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            if not create and version == 0:  # made by a writer that had no room for the schema
                conn.close()
                return None
            _create(conn)
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        if not create and _full(path, exc):
            found = _read_only(path)  # no room for the shared-memory index: read the file as it is
            if found is not False:
                return found
        raise failed(path, exc, "written" if create else "read") from None
    return conn


def _read_only(path: Path) -> sqlite3.Connection | None | Literal[False]:
    """A connection that reads the database file alone, needing no room on the disk (SQLite's
    `immutable`); False when the WAL beside it holds records the file does not have yet (a writer
    is at work or was killed), since they would go unseen."""
    try:
        if os.stat(f"{path}-wal").st_size > 0:
            return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    from urllib.parse import quote

    conn = None
    try:
        conn = sqlite3.connect(f"file:{quote(os.fsencode(path))}?immutable=1", uri=True)
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            conn.close()
            return None
    except sqlite3.DatabaseError:
        if conn is not None:
            conn.close()
        return False
    return conn


def _create(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise sqlite3.DatabaseError(f"unknown schema version {version}")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # a failed BEGIN (a full disk, say) left none to roll back
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


RUN_INSERT = (f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES "
              f"({', '.join('?' * len(RUN_COLUMNS))})")
MODEL_INSERT = (f"INSERT OR REPLACE INTO run_models (run_id, {', '.join(MODEL_COLUMNS)}) VALUES "
                f"(?, {', '.join('?' * len(MODEL_COLUMNS))})")


RUN_UPDATE = (f"UPDATE runs SET {', '.join(c + ' = ?' for c in RUN_COLUMNS if c != 'started_at')} "
              "WHERE id = ?")


def replace(path: Path, run_id: int, entry: dict[str, Any]) -> bool:
    """Put `entry` in place of run `run_id`'s record (all but when it started), per-model usage
    included, in one transaction: a resumable run keeps one record, brought up to date at each
    checkpoint and when it ends. False when there is no such record (it is left to the caller)."""
    conn = connect(path, create=True)
    assert conn is not None
    try:
        conn.execute("BEGIN IMMEDIATE")
        cur = conn.execute(RUN_UPDATE, [*(entry.get(c, 0 if c in COUNTS else None) for c in RUN_COLUMNS
                                          if c != "started_at"), run_id])
        if cur.rowcount != 1:
            conn.execute("ROLLBACK")
            return False
        conn.execute("DELETE FROM run_models WHERE run_id = ?", [run_id])
        if entry.get("models"):
            conn.executemany(MODEL_INSERT, [
                [run_id, m["model"], *(m.get(USAGE_KEYS[c], 0) for c in MODEL_COLUMNS[1:-1]), m.get("cost")]
                for m in entry["models"]])
        conn.execute("COMMIT")
        return True
    except sqlite3.DatabaseError as exc:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise failed(path, exc, "written") from None
    finally:
        conn.close()


def append(path: Path, entry: dict[str, Any]) -> int:
    """Add one run and its per-model usage in one transaction; returns the run's id."""
    return append_all(path, [entry])[0]


def append_all(path: Path, entries: list[dict[str, Any]]) -> list[int]:
    """Add runs (a worker's batch) and their per-model usage in one transaction; their ids."""
    writer = Writer(path)
    try:
        return writer.append(entries)
    finally:
        writer.close()


class Writer:
    """Appends batches to one log over a connection kept between them: a server's batcher writes a
    batch every few tens of milliseconds, and opening a connection (~0.3 ms) cost more than the
    batch's inserts. Before each batch the file is checked by device and inode, so a log moved away
    or deleted meanwhile is started afresh, as a new connection would. Used by one thread at a time
    (the loop's, then the exit's), hence `check_same_thread` off."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None
        self.file: tuple[int, int] | None = None

    def append(self, entries: list[dict[str, Any]]) -> list[int]:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            ids = _insert(conn, entries)
            conn.execute("COMMIT")
            return ids
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            self.close()  # the next batch starts from a new connection
            raise failed(self.path, exc, "written") from None

    def _connection(self) -> sqlite3.Connection:
        if self.conn is not None and _identity(self.path) == self.file:
            return self.conn
        self.close()
        conn = connect(self.path, create=True, shared=True)
        assert conn is not None
        self.conn, self.file = conn, _identity(self.path)
        return conn

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
        self.conn = self.file = None


ROWS_PER_INSERT = 50  # 17 values a row: within the 999 values a statement of any SQLite may bind
MAX_ID = 2**63 - 1
_DEFAULTS = tuple((c, 0 if c in COUNTS else None) for c in RUN_COLUMNS)


def _insert(conn: sqlite3.Connection, entries: list[dict[str, Any]]) -> list[int]:
    """Add runs and their per-model usage inside the caller's write transaction; their ids.

    Many rows go in one INSERT, with the ids SQLite gives rows it numbers itself (one past the
    largest, in turn; the transaction holds the write lock): an INSERT per record cost more than
    the record's own writing (a server's batch of 250 records: 5.1 us a record, 2026-11-28)."""
    last = conn.execute("SELECT max(id) FROM runs").fetchone()[0] or 0
    if last + len(entries) > MAX_ID:  # SQLite then picks unused ids at random: let it, one at a time
        return [_insert_one(conn, entry) for entry in entries]
    ids = list(range(last + 1, last + 1 + len(entries)))
    for start in range(0, len(entries), ROWS_PER_INSERT):
        values: list[Any] = []
        for run_id, entry in zip(ids[start:start + ROWS_PER_INSERT], entries[start:start + ROWS_PER_INSERT],
                                 strict=True):
            values.append(run_id)
            values.extend([entry.get(column, default) for column, default in _DEFAULTS])
        conn.execute(_run_inserts(len(values) // (len(RUN_COLUMNS) + 1)), values)
    models = [row for run_id, entry in zip(ids, entries, strict=True) for row in _model_rows(run_id, entry)]
    if models:
        conn.executemany(MODEL_INSERT, models)
    return ids


def _insert_one(conn: sqlite3.Connection, entry: dict[str, Any]) -> int:
    cur = conn.execute(RUN_INSERT, [entry.get(column, default) for column, default in _DEFAULTS])
    run_id = int(cur.lastrowid or 0)
    models = _model_rows(run_id, entry)
    if models:
        conn.executemany(MODEL_INSERT, models)
    return run_id


def _model_rows(run_id: int, entry: dict[str, Any]) -> list[list[Any]]:
    return [[run_id, m["model"], *(m.get(USAGE_KEYS[c], 0) for c in MODEL_COLUMNS[1:-1]), m.get("cost")]
            for m in entry.get("models") or ()]


@functools.cache
def _run_inserts(rows: int) -> str:
    """An INSERT of `rows` runs with their ids."""
    row = f"({', '.join('?' * (len(RUN_COLUMNS) + 1))})"
    return f"INSERT INTO runs (id, {', '.join(RUN_COLUMNS)}) VALUES {', '.join([row] * rows)}"


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino
