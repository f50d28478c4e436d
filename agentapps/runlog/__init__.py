"""The run log: one record per run in `.agent-apps/runs/runs.db` (SQLite).

Every run of any skill, whatever its outcome, is appended once it ends: skill, a digest of the
args (never the args themselves), model, turns, steps, tokens, cost, duration, exit code, the
error line (declared secrets redacted), the session key and the agents' stop reason. A run is
one `agentapps run`, one request to `agentapps serve` or `agentapps mcp-server`, one event an
`agentapps worker` handles, and one message sent in `agentapps repl` (its spending is what the
session's totals grew by during that turn: `spent_between`). Writing never fails a run: a
problem is one warning on stderr. `AGENTAPPS_RUN_LOG=off` turns it off.
sqlite3 is imported only when a record is written or read (`store`, `query`).

    store   the database: schema, connection settings, appending a record
    query   reading it back: list, show, stats, and the `--since` periods
"""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.core.jsontext import encoder
from agentapps.errors import AgentAppsError, SkillError
from agentapps.runlog.slots import AGENT_TOTALS, SESSION_KEY
from agentapps.secrets import redact

if TYPE_CHECKING:
    from agentapps.runlog.store import Writer
    from agentapps.runstate import Internals

OFF = ("off", "0", "false", "no")
MAX_ERROR = 500  # characters of the error line kept


def enabled(environ: dict[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get("AGENTAPPS_RUN_LOG", "")
    return value.strip().lower() not in OFF


def log_path(data_dir: Path) -> Path:
    return data_dir / "runs" / "runs.db"


# one encoder for every digest, made once (json.dumps with options builds two per call: most of
# a digest's cost)
_DIGEST_JSON = encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def args_digest(args: Any) -> str:
    """A digest that tells identical args apart without keeping them (a lone surrogate, from a
    command-line argument that is not UTF-8 or a JSON `\\udcff` escape, is digested as it is)."""
    text = _DIGEST_JSON(args)
    digest: str = _sha256()(text.encode("utf-8", "surrogatepass")).hexdigest()
    return "sha256:" + digest[:16]


@functools.cache
def _sha256() -> Any:
    from agentapps.tools.bytecode import sha256  # the C module: hashlib would load OpenSSL

    return sha256


def _text(value: str) -> str:
    """`value` as text SQLite can store: a lone surrogate becomes U+FFFD. One such character in
    an error line (quoting an event's payload, say) would otherwise fail the whole batch's insert."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def note_session(internals: Internals, key: str) -> None:
    """The run's session id in its record: the first session key the run used."""
    if internals.get(SESSION_KEY) is None:
        internals.set(SESSION_KEY, key)


def entry_for(*, skill: str, args: Any, internals: Internals, exit_code: int,
              error: dict[str, Any] | None, started: float, totals: dict[str, Any] | None = None,
              note: str | None = None) -> dict[str, Any]:
    """The record of one run, from what the door knows when it ends (`started` is perf_counter).
    `error`: the run's error record (`lifecycle.failure.record`, already redacted and one line);
    `totals`: the run's agent totals when they are not its `AGENT_TOTALS` (a REPL turn);
    `note`: said after the error line (what became of a worker's failed event)."""
    elapsed = time.perf_counter() - started
    totals = _dict(internals.get(AGENT_TOTALS) if totals is None else totals)
    models, usage = _dict(totals.get("models")), _dict(totals.get("usage"))
    line = None
    if error is not None:
        line = str(error.get("message") or error.get("type") or "")
        line = _text(redact(f"{line} ({note})" if note else line, internals)[:MAX_ERROR])
    session = internals.get(SESSION_KEY)
    biggest = _text(str(max(models, key=lambda m: _tokens(models[m])))) if models else None
    return {
        "started_at": round(time.time() - elapsed, 3), "skill": _text(skill), "args_digest": args_digest(args),
        "model": biggest, "turns": totals.get("turns") or 0, "steps": totals.get("steps") or 0,
        "input_tokens": usage.get("inputTokens", 0), "output_tokens": usage.get("outputTokens", 0),
        "cache_read_tokens": usage.get("cacheReadInputTokens", 0),
        "cache_write_tokens": usage.get("cacheWriteInputTokens", 0),
        "cost": totals.get("cost") if models else None, "duration_ms": round(elapsed * 1000, 1),
        "exit_code": exit_code, "error": line, "stop_reason": totals.get("stop_reason"),
        "session_id": _text(redact(str(session), internals)) if session is not None else None,
        "models": [{"model": _text(str(m)), **spent} for m, spent in models.items()],
    }


def spent_between(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """Agent totals (turns, steps, usage, cost, per model) for what `after` adds to `before`: two
    snapshots of one process's growing totals, such as the start and end of a REPL turn."""
    before = _dict(before)
    was = _dict(before.get("models"))
    models: dict[str, dict[str, Any]] = {}
    for model, now in _dict(after.get("models")).items():
        old = _dict(was.get(model))
        spent = {k: v - old.get(k, 0) for k, v in now.items() if k.endswith("Tokens") and isinstance(v, int)}
        if not any(spent.values()):
            continue
        cost, old_cost = now.get("cost"), old.get("cost", 0.0)
        spent["cost"] = None if cost is None or old_cost is None else round(cost - old_cost, 8)
        models[model] = spent
    usage: dict[str, int] = {}
    for spent in models.values():
        for key, value in spent.items():
            if key != "cost":
                usage[key] = usage.get(key, 0) + value
    costs = [spent["cost"] for spent in models.values()]
    return {"turns": (after.get("turns") or 0) - (before.get("turns") or 0),
            "steps": (after.get("steps") or 0) - (before.get("steps") or 0),
            "usage": usage, "models": models, "stop_reason": after.get("stop_reason"),
            "cost": None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 8)}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _tokens(spent: Any) -> int:
    return sum(v for k, v in spent.items() if k.endswith("Tokens") and isinstance(v, int)) \
        if isinstance(spent, dict) else 0


def log_run(data_dir: Path | None, *, quiet: bool = False, run_id: int | None = None,
            **run: Any) -> int | None:
    """Append the run (see `entry_for`); returns its id, or None when off or not written.
    `run_id`: the record the run already has (a resumable agent run's, see `update_run`), brought
    up to date instead of adding another."""
    if not enabled():
        return None
    try:
        entry = entry_for(**run)
    except Exception as exc:  # noqa: BLE001 - the log must never fail or hide the run's own outcome
        _warn(exc, quiet)
        return None
    if run_id is not None and update_run(data_dir, run_id, entry, quiet=quiet):
        return run_id
    ids = log_entries(data_dir, [entry], quiet=quiet)
    return ids[0] if ids else None


def update_run(data_dir: Path | None, run_id: int, entry: dict[str, Any], *, quiet: bool = False) -> bool:
    """Replace run `run_id`'s record with `entry` (all but `started_at`); False (one warning, unless
    the record is gone) when it was not written. Never raises."""
    try:
        if data_dir is None:
            raise SkillError("no folder for the run log could be found.")
        from agentapps.core.atomic import require_inside
        from agentapps.runlog.store import replace

        require_inside(data_dir, log_path(data_dir))
        return replace(log_path(data_dir), run_id, entry)
    except Exception as exc:  # noqa: BLE001 - the log must never fail or hide the run's own outcome
        _warn(exc, quiet)
        return False


def log_entries(data_dir: Path | None, entries: list[dict[str, Any]], *, quiet: bool = False,
                writer: Writer | None = None) -> list[int]:
    """Append records made by `entry_for` in one transaction (a worker writes its events' records
    in batches so); their ids, none when not written (one warning then). `writer`: a connection kept
    between batches (`store.Writer`, for this `data_dir`'s log)."""
    try:
        if data_dir is None:  # the door could not tell where (boot.log_dir_for failed)
            raise SkillError("no folder for the run log could be found.")
        from agentapps.core.atomic import require_inside
        from agentapps.runlog.store import append_all

        require_inside(data_dir, log_path(data_dir))  # a committed `.agent-apps/runs` symlink
        return append_all(log_path(data_dir), entries) if writer is None else writer.append(entries)
    except Exception as exc:  # noqa: BLE001 - the log must never fail or hide the run's own outcome
        _warn(exc, quiet, len(entries))
        return []


def _warn(exc: Exception, quiet: bool, count: int = 1) -> None:
    if not quiet:
        why = exc.message if isinstance(exc, AgentAppsError) else f"{type(exc).__name__}: {exc}"
        what = "the run was" if count == 1 else f"{count} runs were"
        sys.stderr.write(f"warning: {what} not added to the run log: {why}\n")
