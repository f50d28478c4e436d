"""Reading the run log back: recent runs, one run, totals per skill and model, `--since` periods."""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from agentapps.errors import UsageError
from agentapps.runlog.store import MODEL_COLUMNS, RUN_COLUMNS, connect, failed, sqlite3

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since(text: str, now: float | None = None) -> float:
    """`30m`, `12h`, `7d`, `2w` ago, or an ISO date or date-time (local time) -> epoch seconds."""
    now = time.time() if now is None else now
    found = _RELATIVE.match(text.strip().lower())
    if found:
        return now - float(found[1]) * _UNIT[found[2]]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise UsageError(f"--since expects a period like 30m, 12h, 7d, 2w or a date like 2026-11-01, "
                         f"not {text!r}.") from None


def _rows(path: Path, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    conn = connect(path, create=False)
    if conn is None:
        return []
    try:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute(sql, params)]
    except sqlite3.DatabaseError as exc:
        raise failed(path, exc, "read") from None  # busy past the wait, a full disk, damage
    finally:
        conn.close()


def _where(skill: str | None, after: float | None, alias: str = "") -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if skill:
        clauses.append(f"{alias}skill = ?")
        params.append(skill)
    if after is not None:
        clauses.append(f"{alias}started_at >= ?")
        params.append(after)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def list_runs(path: Path, *, skill: str | None = None, after: float | None = None,
              limit: int = 50) -> list[dict[str, Any]]:
    """The newest runs first."""
    where, params = _where(skill, after)
    return _rows(path, f"SELECT id, {', '.join(RUN_COLUMNS)} FROM runs{where} ORDER BY id DESC LIMIT ?",
                 [*params, limit])


def get_run(path: Path, run_id: int) -> dict[str, Any] | None:
    if not 1 <= run_id < 2**63:  # no such id in SQLite (a larger one would not even bind)
        return None
    found = _rows(path, f"SELECT id, {', '.join(RUN_COLUMNS)} FROM runs WHERE id = ?", [run_id])
    if not found:
        return None
    found[0]["models"] = _rows(path, f"SELECT {', '.join(MODEL_COLUMNS)} FROM run_models WHERE "
                                     "run_id = ? ORDER BY rowid", [run_id])
    return found[0]


def stats(path: Path, *, skill: str | None = None, after: float | None = None) -> list[dict[str, Any]]:
    """Per skill and model: runs, failed runs, unfinished runs (exit -1: running, or killed and not
    resumed yet; a resumed run keeps its one record), tokens and cost (None when a price was unknown)."""
    where, params = _where(skill, after, "r.")
    return _rows(path, f"""
        SELECT r.skill AS skill, m.model AS model, COUNT(DISTINCT r.id) AS runs,
               COUNT(DISTINCT CASE WHEN r.exit_code NOT IN (0, -1) THEN r.id END) AS failed,
               COUNT(DISTINCT CASE WHEN r.exit_code = -1 THEN r.id END) AS unfinished,
               COALESCE(SUM(m.input_tokens), 0) AS input_tokens,
               COALESCE(SUM(m.output_tokens), 0) AS output_tokens,
               COALESCE(SUM(m.cache_read_tokens), 0) AS cache_read_tokens,
               COALESCE(SUM(m.cache_write_tokens), 0) AS cache_write_tokens,
               CASE WHEN MAX(m.model IS NOT NULL AND m.cost IS NULL) THEN NULL ELSE SUM(m.cost) END AS cost
        FROM runs r LEFT JOIN run_models m ON m.run_id = r.id{where}
        GROUP BY r.skill, m.model ORDER BY r.skill, m.model""", params)


def cost_since(path: Path, after: float) -> float:
    """Dollars the runs recorded since `after` (epoch seconds) cost; a run of an unpriced model
    counts nothing."""
    found = _rows(path, "SELECT COALESCE(SUM(cost), 0) AS spent FROM runs WHERE started_at >= ?", [after])
    return float(found[0]["spent"]) if found else 0.0
