"""`agentapps repl [SKILL] [--task TEXT]`: an interactive persistent agent on the terminal.

One persistent agent run serves the whole session, so the conversation (history across turns)
is the model's own. The terminal is its gateway: each line typed is the next user message.
This thread keeps the terminal (readline: history in ~/.agent-apps/repl_history, Tab completes
skill names); the agent runs on an event loop in a worker thread. Ctrl-C during a turn cancels it
(the running snippet stops, the turn's remaining tool calls are refused, its output is hidden)
and returns to the prompt once the model's reply is in; a second Ctrl-C in the same turn ends
the session (exit 130). Ctrl-C at the prompt clears the line; Ctrl-D (end of input) ends the
session cleanly (exit 0). Failures are raised to the CLI's one error boundary. On a terminal, a
line typed during a turn is queued as the next message, and `/steer TEXT` steers the running turn
(`repl_ahead.py`).

Each message sent is a run in the run log (`TurnLog`): one record per turn, not per session, so
spending lands as it happens (a session that runs for hours, or ends by a closed terminal or a
kill, is not lost from `runs stats`), `--since` splits a long session where the money was spent,
and the skill files written between turns are loaded like a new run's (the gateway's RUN_STARTED).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO, cast

from agentapps.agent.slots import AGENT_SPEND
from agentapps.agent.steering import INBOX, Inbox
from agentapps.cli.repl_ahead import TypeAhead
from agentapps.cli.repl_command import DEFAULT_SKILL
from agentapps.errors import AgentAppsError, InterruptedError_, UsageError
from agentapps.gateway import GATEWAY, Gateway
from agentapps.runlog.slots import AGENT_TOTALS

PROMPT = "> "
HISTORY_LENGTH = 1000


class Session:
    """The agent side of a REPL session: the gateway fed by the terminal, and the worker thread."""

    def __init__(self, root: Any, tool: Any, first: str) -> None:
        self.root, self.tool, self.first = root, tool, first
        self.inbox: queue.Queue[str | None] = queue.Queue()
        self.asking = threading.Event()  # the agent waits for the next message
        self.done = threading.Event()
        self.gateway = Gateway(self._read, "terminal")
        self.steering = Inbox()  # `/steer TEXT` typed during a turn (used on the loop's thread)
        self.log = TurnLog(root.globals, tool.name, self.gateway)
        self.log.start(first)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Any] | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="agentapps-repl", daemon=True)

    def _read(self, prompt: str | None) -> str | None:
        self.log.answered()  # before the prompt shows: the turn's record is in when it does
        self.asking.set()
        return self.inbox.get()

    def send(self, line: str | None) -> None:
        if line is not None:
            self.log.start(line)
        self.asking.clear()
        self.inbox.put(line)

    def interrupt(self) -> None:
        self.log.interrupted = True
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.gateway.interrupt)
            self.loop.call_soon_threadsafe(self.steering.clear)  # the turn is over: nothing steers it

    def steer(self, text: str) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.steering.steer, text)

    def stop(self) -> None:
        if self.loop is not None and self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as exc:  # noqa: BLE001 - handed to the terminal thread, which raises it
            self.error = exc
        finally:
            self.done.set()

    async def _run(self) -> None:
        from agentapps.core.cleanup import run_cleanups

        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        GATEWAY.set(self.gateway)
        INBOX.set(self.steering)
        try:
            await self.root.manager.invoke(self.tool, {}, context={"locals": {"userMessage": self.first}})
        except BaseException as exc:
            self.log.ended(exc)
            raise
        else:
            self.log.ended(None)
        finally:
            await run_cleanups(self.root.globals.internals)


class TurnLog:
    """The run log of a REPL session: one record per message the user sends, written when the
    agent asks for the next one, or when the session ends during the turn (with its exit code).
    A turn's usage, cost, turns and steps are what the session's totals grew by during it."""

    def __init__(self, g: Any, skill: str, gateway: Gateway) -> None:
        self.g, self.skill, self.gateway = g, skill, gateway
        self.spent: dict[str, Any] = {}  # the session's totals when the last record was written
        self.turn: tuple[str, float] | None = None  # the message in flight, and when it was sent
        self.interrupted = False  # the user pressed Ctrl-C during it

    def start(self, message: str) -> None:
        self.turn, self.interrupted = (message, time.perf_counter()), False

    def answered(self) -> None:
        """The agent answered and waits for the next message (on the gateway's thread)."""
        if self.interrupted:
            self._write(130, InterruptedError_("The user interrupted this turn (Ctrl-C)."), live=True)
        else:
            self._write(0, None, live=True)

    def ended(self, error: BaseException | None) -> None:
        """The session's agent run ended (on its loop's thread)."""
        if error is None or isinstance(error, AgentAppsError):
            self._write(0 if error is None else error.exit_code, error, live=False)
        elif isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):  # a second Ctrl-C
            self._write(130, InterruptedError_("Interrupted."), live=False)
        else:
            self._write(1, error, live=False)

    def _totals(self, live: bool) -> dict[str, Any]:
        """The session's totals so far; `live`: its agent is still running, so its own turns and
        steps are not in `AGENT_TOTALS` yet (sub-agents' are: they ended within their turn)."""
        internals = self.g.internals
        totals = dict(internals.get(AGENT_TOTALS) or {})
        spend = internals.get(AGENT_SPEND)
        totals.update(spend.totals() if spend is not None else {"models": {}})
        if live:
            for key in ("turns", "steps"):
                totals[key] = (totals.get(key) or 0) + self.gateway.agent_counts.get(key, 0)
        return totals

    def _write(self, code: int, error: BaseException | None, *, live: bool) -> None:
        if self.turn is None:  # nothing was sent since the last record (Ctrl-D at the prompt)
            return
        message, started = self.turn
        self.turn = None
        from agentapps.runlog import enabled, log_run, spent_between

        if not enabled():
            return
        try:
            now = self._totals(live)
            spent = spent_between(self.spent, now)
        except Exception as exc:  # noqa: BLE001 - the run log never fails the session
            from agentapps.cli.render import warn

            warn(f"the turn was not added to the run log: {type(exc).__name__}: {exc}")
            return
        self.spent = now
        spend = self.g.internals.get(AGENT_SPEND)
        if spend is not None:  # what a daily or monthly budget finds in the run log from now on
            spend.recorded_cost = spend.cost or 0.0
        if live:
            spent["stop_reason"] = "interrupted" if code else "answered"
        from agentapps.lifecycle.failure import record

        found = None if error is None else record(error, self.g.internals.redactor, skill=self.skill)
        log_run(self.g.config.log_dir, skill=self.skill, args={"message": message}, internals=self.g.internals,
                exit_code=code, error=found, started=started, totals=spent)


class QuietWhenInterrupted:
    """The progress display, silent from a Ctrl-C until the next turn starts."""

    def __init__(self, progress: Any, gateway: Gateway) -> None:
        self.progress, self.gateway = progress, gateway

    def __call__(self, type_: str, data: dict[str, Any]) -> None:
        if self.gateway.interrupted and type_ not in ("agent-complete",):
            return
        self.progress(type_, data)


def _history_file() -> Path:
    from agentapps.boot import user_skills_dir

    return user_skills_dir().parent / "repl_history"


def _readline(names: list[str]) -> Any:
    """Set up readline (when there is one): history and Tab completion of skill names."""
    try:
        import readline
    except ImportError:  # no readline on this platform: plain input()
        return None

    def complete(text: str, state: int) -> str | None:
        found = [n for n in names if n.startswith(text)]
        return found[state] if state < len(found) else None

    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n\"'`(){}[],;")
    readline.parse_and_bind("tab: complete")
    readline.set_history_length(HISTORY_LENGTH)
    with contextlib.suppress(OSError):
        readline.read_history_file(_history_file())
    return readline


def _save_history(readline: Any) -> None:
    if readline is None:
        return
    path = _history_file()
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        readline.write_history_file(path)
        os.chmod(path, 0o600)


def _ask(prompt: str) -> str | None:
    """One line from the terminal; None at end of input; Ctrl-C gives a fresh prompt."""
    while True:
        try:
            line = input(prompt)
        except KeyboardInterrupt:
            sys.stderr.write("\n")
            continue
        except EOFError:
            sys.stderr.write("\n")
            return None
        if line.strip():
            return line


def _wait_for_turn(session: Session, ahead: TypeAhead | None) -> None:
    """Until the agent asks for input or the session ends; Ctrl-C cancels the turn (twice: the
    session). Lines typed meanwhile are kept by `ahead` (a terminal), and steers go to the agent."""
    interrupted = False
    while not (session.asking.is_set() or session.done.is_set()):
        try:
            if ahead is None:
                session.asking.wait(0.1)
            else:
                for text in ahead.poll(0.1):
                    session.steer(text)
        except KeyboardInterrupt:
            if ahead is not None:
                ahead.drop()  # what was typed for the cancelled turn is not sent
            if interrupted:
                session.stop()
                session.done.wait()
                raise InterruptedError_("Interrupted.") from None
            interrupted = True
            session.interrupt()
            sys.stderr.write("\n^C: turn cancelled (Ctrl-C again ends the session)\n")
            sys.stderr.flush()


def repl(skill: str | None, task: str | None, *, model: str | None = None, replay: str | None = None,
         quiet: bool = False) -> int:
    from agentapps.boot import bootstrap
    from agentapps.cascade.interface import returns_of
    from agentapps.cli.progress import Progress
    from agentapps.cli.streams import RedactingStream
    from agentapps.lifecycle.served import register_secrets
    from agentapps.sandbox.pool import keep_warm

    keep_warm()  # a sub-agent's first snippet finds its sandbox process started
    root = bootstrap()
    g = root.globals
    g.config.overrides.update({k: v for k, v in (("model", model), ("replay", replay)) if v})
    g.config.overrides["persistent"] = True  # the outermost agent of this process
    tool = g.lookup.resolve(skill or DEFAULT_SKILL)
    if tool.kind != "markdown":
        raise UsageError(f"'{tool.name}' is a {tool.kind} skill; the REPL talks to a markdown skill's agent.",
                         skill=tool.name)
    if returns_of(tool, g.lookup) is not None:
        raise UsageError(f"'{tool.name}' declares `returns`; the REPL needs a skill that answers in text.",
                         skill=tool.name)
    readline = _readline(sorted(g.lookup.all_names()))
    try:
        first = task if task and task.strip() else _ask(PROMPT)
        if first is None:
            return 0
        session = Session(root, tool, first)
        register_secrets(g)  # the agent's text is shown redacted, as under `run`
        shown = RedactingStream(sys.stderr, g.internals.redactor, escaped=True)  # and terminal controls
        progress = Progress(cast(TextIO, shown))
        if not quiet:
            g.internals.reporter = QuietWhenInterrupted(progress, session.gateway)
        ahead = TypeAhead(sys.stdin.fileno()) if sys.stdin.isatty() else None
        session.thread.start()
        try:
            while True:
                _wait_for_turn(session, ahead)
                if session.done.is_set():
                    break
                progress.close()
                shown.drain()
                line = ahead.take() if ahead is not None else None
                if line is not None:  # typed during the turn: sent without a prompt
                    shown.write(f"{PROMPT}{line}\n")  # redacted and escaped, as the agent's text is
                    shown.drain()
                    session.send(line)
                    continue
                line = None if ahead is not None and ahead.ended else _ask(PROMPT)
                session.send(line)
                if line is None:
                    session.done.wait()
                    break
        finally:
            progress.close()
            shown.drain()
        if session.error is not None:
            raise session.error
        return 0
    finally:
        _save_history(readline)
