"""The run log's SQLite database: its schema, how a connection is set up, appending a record.

WAL journal, so readers never block the writer and concurrent `agentapps run`s queue on a short
busy wait; each record goes in one transaction, so a process killed at any point (kill -9) leaves
the log with or without that record, never torn. `synchronous=OFF`: no fsync per run (it would
cost more than the whole 2 ms budget of a record on a virtual disk); a crash of agentapps cannot
lose a committed record, an OS crash or power loss can lose the last few. The folder is created
0700 and the files 0600. A damaged database is reported, never replaced.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

try:  # the C module itself: the `sqlite3` package also imports datetime (~1 ms) for adapters we never use
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - an interpreter without the C module
    import sqlite3  # type: ignore[no-redef]

__all__ = ["append", "append_all", "connect", "damaged", "sqlite3"]

from agentapps.errors import StoreCorruptError

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


def connect(path: Path, *, create: bool) -> sqlite3.Connection | None:
    """A connection set up for the log; None when it does not exist and `create` is false."""
    if not path.exists():
        if not create:
            return None
        path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # .agent-apps/
        path.parent.mkdir(mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))  # SQLite keeps these permissions
    conn = None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)
        conn.execute("PRAGMA synchronous=OFF")
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            _create(conn)
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        if type(exc) is not sqlite3.DatabaseError:  # busy, read-only, disk full...: said as it is
            raise
        raise damaged(path, exc) from None  # not a database, malformed
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


def append(path: Path, entry: dict[str, Any]) -> int:
    """Add one run and its per-model usage in one transaction; returns the run's id."""
    return append_all(path, [entry])[0]


def append_all(path: Path, entries: list[dict[str, Any]]) -> list[int]:
    """Add runs (a worker's batch) and their per-model usage in one transaction; their ids."""
    conn = connect(path, create=True)
    assert conn is not None
    try:
        conn.execute("BEGIN IMMEDIATE")
        ids = []
        for entry in entries:
            values = [entry.get(c, 0 if c in COUNTS else None) for c in RUN_COLUMNS]
            cur = conn.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES "
                               f"({', '.join('?' * len(RUN_COLUMNS))})", values)
            run_id = int(cur.lastrowid or 0)
            conn.executemany(
                f"INSERT OR REPLACE INTO run_models (run_id, {', '.join(MODEL_COLUMNS)}) VALUES "
                f"(?, {', '.join('?' * len(MODEL_COLUMNS))})",
                [[run_id, m["model"], *(m.get(USAGE_KEYS[c], 0) for c in MODEL_COLUMNS[1:-1]), m.get("cost")]
                 for m in entry.get("models", ())])
            ids.append(run_id)
        conn.execute("COMMIT")
        return ids
    except sqlite3.DatabaseError as exc:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        if type(exc) is not sqlite3.DatabaseError:  # busy, read-only, a constraint: not damage
            raise
        raise damaged(path, exc) from None
    finally:
        conn.close()
