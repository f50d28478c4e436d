"""Checkpoints of an `agentapps run` agent, and what `agentapps run --resume RUN_ID` continues from.

The CLI hands the run a `Ticket` (the skill, its file's digest, the args and runner settings). The
agent of that skill (the command's own skill, not a sub-agent) then saves a checkpoint after each
completed model turn: its conversation as the provider keeps it, the sandbox's `memory`, the turn,
step and usage counters (with each model's cost) and, under `--record`, the turns recorded so far.
The first checkpoint also gives the run its run-log record (exit code -1, stop reason
`unfinished`), which every later checkpoint brings up to date and the run's end completes, so a
run killed with `kill -9` is listed with what it spent and an id to resume; a resumed run keeps
that one record, so its usage is counted once.

Checkpoints live in the project's session store (`stores.sessions`: file, under
`.agent-apps/checkpoints/` beside the run log (`~/.agent-apps/` outside a project), or Redis, under `agentapps:{namespace}:checkpoint:run-ID`; a project
that keeps sessions in memory keeps checkpoints in files, since memory ends with the process). Only
the latest is kept, for `stores.checkpointTtl` ms after it was written (7 days): a Redis key expires,
and a run's first checkpoint prunes the older files; an older one is refused. While a run runs (from
its first checkpoint) and while it is resumed, its id is locked for its process
(agentapps.stores.runlock), so a second `--resume` is refused at once. Declared secrets are redacted from everything saved; a run whose args or
`--local` settings held a secret's value is saved marked so, and refuses to resume (it could not
run with the same args). A checkpoint that cannot be written (a full disk, Redis gone) never fails
the run: one warning, and resuming starts from the last checkpoint that was written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.agent.slots import AGENT_RESUMABLE, AGENT_TICKET
from agentapps.errors import NoCheckpointError

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals
    from agentapps.stores.sessions import SessionStore

VERSION = 1
UNFINISHED = -1  # the exit code of a record whose run has not ended (or was killed before it could say)


def key_of(run_id: int) -> str:
    return f"run-{run_id}"


def store_for(g: Globals) -> SessionStore:
    """Where this project keeps checkpoints: its session store, files when that is memory."""
    from agentapps.stores.config import backend
    from agentapps.stores.sessions import FileSessionStore

    if backend(g, "sessions") == "redis":
        from agentapps.stores.config import link_for
        from agentapps.stores.redissessions import RedisSessionStore

        return RedisSessionStore(link_for(g), kind="checkpoint")
    return FileSessionStore(g.config.log_dir / "checkpoints")  # beside the run log whose ids key them


def ttl_of(g: Globals) -> float:
    """Seconds a checkpoint is kept after it was last written (`stores.checkpointTtl`, 7 days)."""
    from agentapps.stores.config import stores_config

    return stores_config(g).checkpoint_ttl


def _age(seconds: float) -> str:
    days = seconds / 86_400
    if days >= 1:
        return f"{days:g} day{'s' if days != 1 else ''}"
    return f"{seconds / 3600:.3g} hours" if seconds >= 3600 else f"{seconds:g} s"


def expired(g: Globals, found: dict[str, Any]) -> bool:
    saved = found.get("savedAt")
    return isinstance(saved, int | float) and time.time() - saved > ttl_of(g)


def load(g: Globals, run_id: int) -> dict[str, Any]:
    """Run `run_id`'s latest checkpoint, or NoCheckpointError saying why there is none to use."""
    store = store_for(g)
    entries = store.load(key_of(run_id))
    found = entries[-1] if entries else None
    if not isinstance(found, dict) or found.get("runId") != run_id:
        raise NoCheckpointError(f"Run {run_id} has no checkpoint to resume from: it made no complete "
                                "model turn as `agentapps run`, its checkpoints were not saved (see the "
                                f"warning it printed), or its checkpoint expired ({_age(ttl_of(g))} after it "
                                "was written: `stores.checkpointTtl`); run it again.")
    if expired(g, found):  # not pruned yet: it is refused, and goes
        store.clear(key_of(run_id))
        raise NoCheckpointError(f"Run {run_id}'s checkpoint expired: it is more than {_age(ttl_of(g))} old "
                                "(`stores.checkpointTtl`); run it again.")
    if found.get("version") != VERSION:
        raise NoCheckpointError(f"Run {run_id}'s checkpoint was written by another version of agentapps "
                                f"(format {found.get('version')!r}); run it again.")
    if found.get("secretHeld"):
        raise NoCheckpointError(f"Run {run_id} cannot be resumed: its args or --local settings held a "
                                "secret's value, which checkpoints never keep; run it again.")
    return found


def digest_of(path: str | None) -> str | None:
    """The sha256 of the skill file at `path` (None when there is none or it cannot be read)."""
    if not path:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    from agentapps.tools.bytecode import sha256

    return "sha256:" + str(sha256(data).hexdigest())


@dataclass
class Ticket:
    """What `agentapps run` tells its agent about the run it may checkpoint (and resume)."""

    skill: str
    path: str | None
    args: dict[str, Any]
    options: dict[str, Any]  # the runner settings a resume reuses: model, replay, record, ...
    data_dir: Path  # the run log's folder
    started: float = field(default_factory=time.perf_counter)  # this try's start
    earlier_ms: float = 0.0  # the time earlier tries took (a resumed run's)
    run_id: int | None = None  # the run's record: reserved at the first checkpoint, or the resumed run's
    resume: dict[str, Any] | None = None  # the checkpoint this run continues from
    digest: str | None = None
    claimed: bool = False  # an agent took it: only the first agent of the command's own skill saves
    warned: bool = False
    pruned: bool = False  # the file store's expired checkpoints were removed (at the first save)
    key: str | None = None  # a worker's event: the checkpoint's key (the worker logs each try itself)
    earlier: dict[str, Any] | None = None  # a resumed run's totals at its checkpoint (agent.resume)

    def __post_init__(self) -> None:
        if self.digest is None:
            self.digest = digest_of(self.path)

    def begun(self) -> float:
        """A perf_counter start that counts the earlier tries too (the record's duration)."""
        return self.started - self.earlier_ms / 1000

    def save(self, g: Globals, state: dict[str, Any], totals: dict[str, Any]) -> bool:
        """Record the run's progress in the run log, then write `state` (a completed turn's) as its
        checkpoint; whether the record was written. Never raises: a failure is one warning, and the
        run goes on."""
        from agentapps import runlog

        recorded = False
        if self.key is None and self.run_id is None and not runlog.enabled():
            return False  # no record, no id to resume by
        try:
            if self.key is not None:  # a worker's event: no record of the ticket's own
                self._store(g, state, self.key)
                return False
            entry = runlog.entry_for(skill=self.skill, args=self.args, internals=g.internals,
                                     exit_code=UNFINISHED, error=None, started=self.begun(), totals=totals)
            entry["stop_reason"] = "unfinished"
            if self.run_id is None:
                ids = runlog.log_entries(self.data_dir, [entry], quiet=True)
                if not ids:
                    raise OSError("the run log could not be written")
                self.run_id = ids[0]
                self._hold(g)
            elif not runlog.update_run(self.data_dir, self.run_id, entry, quiet=True):
                raise OSError("the run log could not be written")
            recorded = True
            self._store(g, state, key_of(self.run_id))
        except Exception as exc:  # noqa: BLE001 - a checkpoint is a side record: the run goes on
            self._warn(exc)
        return recorded

    def _hold(self, g: Globals) -> None:
        """Lock the new run's id for this process, so a `--resume` of it is refused while it runs."""
        from agentapps.stores.runlock import take

        assert self.run_id is not None
        try:
            take(g, self.run_id)
        except Exception:  # noqa: BLE001, S110 - the store is away: saving the checkpoint warns of it
            pass

    def _store(self, g: Globals, state: dict[str, Any], key: str) -> None:
        redactor = g.internals.redactor
        held = {"args": self.args, "options": self.options}
        body = redactor.redact_data({
            "version": VERSION, "runId": self.run_id, "skill": self.skill, "path": self.path,
            "digest": self.digest, "elapsedMs": round((time.perf_counter() - self.begun()) * 1000, 1),
            "savedAt": time.time(), "secretHeld": redactor.redact_data(held) != held, **held, **state})
        if self.key is None and any(body["options"].get(k) for k in ("approve", "local", "record")):
            from agentapps.agent.seal import seal  # what a resume may reuse of them: agent/seal.py

            body["seal"] = seal(body["runId"], body["skill"], body["options"])
        store, ttl = store_for(g), ttl_of(g)
        from agentapps.stores.sessions import FileSessionStore

        if isinstance(store, FileSessionStore):
            store.append(key, body, 1)
            if not self.pruned:  # once per run: the checkpoints nobody resumed within the TTL go
                self.pruned = True
                prune(store.root, time.time() - ttl)
        else:  # Redis: the key expires TTL after its last write
            store.append(key, body, 1, ttl=ttl)  # type: ignore[call-arg]

    def clear(self, g: Globals) -> None:
        """Drop the checkpoint (the run ended well, or will not be tried again). Never raises."""
        key = self.key if self.key is not None else key_of(self.run_id) if self.run_id is not None else None
        if key is None:
            return
        try:
            store_for(g).clear(key)
        except Exception:  # noqa: BLE001, S110 - a checkpoint left behind is harmless (and refused)
            pass

    def _warn(self, exc: Exception) -> None:
        if self.warned:
            return
        self.warned = True
        import sys

        from agentapps.errors import AgentAppsError

        why = exc.message if isinstance(exc, AgentAppsError) else (
            getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
        where = f"run {self.run_id}" if self.run_id is not None else "the run"
        if self.key is not None:
            where = f"the run ({self.key})"
        sys.stderr.write(f"warning: a checkpoint of {where} was not saved: {why.rstrip('.')}; the run goes on, and a "
                         "resume starts from its last saved checkpoint.\n")


def prune(folder: Path, before: float) -> None:
    """Remove the checkpoint files in `folder` last written before `before` (epoch seconds), and
    the run lock files nobody holds that are as old. Never raises."""
    import os

    from agentapps.stores.runlock import prune_locks

    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith(".")]
    except OSError:
        return
    from agentapps.core.atomic import FileLock

    try:
        with FileLock(folder / ".lock", timeout=5):  # the store's writers' lock: no fresh write is removed
            for name in names:
                path = folder / name
                try:
                    if path.stat().st_mtime < before:
                        path.unlink()
                except OSError:
                    continue
    except Exception:  # noqa: BLE001 - busy or unwritable: the next run prunes them
        return
    prune_locks(folder, before)


def event_ticket(g: Globals, tool: Any, event: dict[str, Any], group: str) -> Ticket:
    """A worker's ticket for handling `event` with `tool` (an agent skill): checkpointed under the
    event's id, and resumed from its checkpoint when an earlier delivery of the event failed after
    a completed turn (unless the skill file changed since: then it starts afresh)."""
    key = f"event-{group}-{event.get('topic')}-{event.get('id')}"
    ticket = Ticket(tool.name, str(tool.path) if tool.path else None, {"event": event}, {},
                    g.config.log_dir, key=key)
    try:
        entries = store_for(g).load(key)
    except Exception:  # noqa: BLE001 - an unreadable checkpoint: the event is handled afresh
        entries = []
    found = entries[-1] if entries else None
    if (isinstance(found, dict) and found.get("version") == VERSION and not found.get("secretHeld")
            and not expired(g, found)
            and found.get("skill") == tool.name and found.get("digest") == ticket.digest):
        ticket.resume = found
        ticket.earlier_ms = float(found.get("elapsedMs") or 0)
    g.internals.set(AGENT_TICKET, ticket)
    return ticket


@dataclass
class Resumable:
    """One agent's link to its provider loop: where to start (`seed`: `turn`, `messages`, the
    provider's own `provider` state, or None for a fresh run), and `save`, which the loop calls
    after each completed turn with the conversation it will send next."""

    seed: dict[str, Any] | None
    on_save: Any  # (turn, messages, provider_state) -> None

    def save(self, turn: int, messages: list[dict[str, Any]], provider: dict[str, Any]) -> None:
        self.on_save(turn, messages, provider)


def resumable_for(ctx: Context, hook_ref: Any) -> Resumable | None:
    """The provider's side of the link, by its agent's hook ref (None: this agent does not
    checkpoint)."""
    found = ctx.globals.internals.get(AGENT_RESUMABLE).get(str(hook_ref))
    return found if isinstance(found, Resumable) else None


def ticket_for(g: Globals, served: Context) -> Ticket | None:
    """The run's ticket when `served` is the command's own skill and no agent took it yet."""
    ticket = g.internals.get(AGENT_TICKET)
    if not isinstance(ticket, Ticket) or ticket.claimed or served.envelope.depth != 1:
        return None
    if served.tool.name != ticket.skill:
        return None
    ticket.claimed = True
    return ticket
