"""One run held by this process: started by `/invocations`, `/chat`, a webhook or a schedule.

It runs the skill through the full pipeline as a run of its own (`agentapps.lifecycle.served`), turns its
agent's trace into stream events, asks trust approvals of the stream's owner (`approval-pending`,
answered through `POST /approve` on any replica), takes steering and follow-up messages for its
agent (`POST /steer`, `POST /follow-up`: its `Inbox`), and ends with the object `agentapps run --json`
prints — redacted, and appended to the run log.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import time
from typing import TYPE_CHECKING, Any

from agentapps.agent.steering import INBOX, MAX_WAITING, Inbox
from agentapps.errors import AgentAppsError, InterruptedError_, LimitError
from agentapps.lifecycle import served
from agentapps.lifecycle.outcome import outcome
from agentapps.lifecycle.results import json_result
from agentapps.lifecycle.streaming import StreamRedactor
from agentapps.runlog import entry_for
from agentapps.serve.coord import TAKEN, Answer
from agentapps.serve.events import stream_event
from agentapps.trust import ASK

if TYPE_CHECKING:
    from agentapps.serve.state import Server

log = logging.getLogger("agentapps.serve")
Event = tuple[str, dict[str, Any]]
DECISIONS = {"approve": "once", "deny": "deny"}


class LiveRun:
    def __init__(self, server: Server, skill: str, args: dict[str, Any], *, owner: str,
                 thread: str | None = None, streaming: bool = False, traceparent: str | None = None) -> None:
        self.server, self.skill, self.args, self.owner = server, skill, args, owner
        self.thread, self.streaming = thread, streaming
        self.id = os.urandom(12).hex()  # secrets.token_hex(12) without its two calls: every run has one
        self.loop = asyncio.get_running_loop()
        self.pending: dict[str, asyncio.Future[str]] = {}
        self.decided: set[str] = set()  # approvals whose decision the client was already sent
        self.inbox = Inbox()  # steering and follow-ups for the run's agent, taken on this loop
        self.run = served.begin(server.g, server.exposure.policy, run_id=self.id, traceparent=traceparent)
        self.outcome: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None
        # streamed model text, redacted across deltas: a secret split between two is still caught
        self.text = StreamRedactor(server.g.internals.redactor)
        if streaming:  # its queue made here, on the loop: events can come from worker threads
            self.events = asyncio.Queue()

    # made when first needed (a streamed run's queue at once): a run of /invocations needs none
    @functools.cached_property
    def events(self) -> asyncio.Queue[Event | None]:
        return asyncio.Queue()

    def start(self) -> LiveRun:
        self.task = asyncio.ensure_future(self._execute())
        return self

    async def run_here(self, stopping: str) -> None:
        """The run in the calling task (a request that waits for its end; `cancel` cannot reach it).
        A cancellation of that task (the server stopping) ends the run with `stopping` as its error;
        once its outcome is made and recorded, the cancellation goes on."""
        await self._execute(stopping)
        here = asyncio.current_task()
        if here is not None and here.cancelling():
            raise asyncio.CancelledError

    # -- events -----------------------------------------------------------------------------------

    def emit(self, name: str, data: dict[str, Any]) -> None:
        if not self.streaming:
            return
        if name == "text-delta":
            shown = self.text.feed(str(data.get("text") or ""))
            if not shown:
                return  # all of it could begin a secret: it goes out with the next delta
            data = {**data, "text": shown}
        else:
            self._end_text()
        self._put(name, data)

    def _put(self, name: str, data: dict[str, Any]) -> None:
        item = (name, self.server.g.internals.redactor.redact_data(data))
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self.events.put_nowait(item)
        else:  # reported from a worker thread
            self.loop.call_soon_threadsafe(self.events.put_nowait, item)

    def _end_text(self) -> None:
        """Any other event ends a run of deltas: what was held back goes out first, in order."""
        held = self.text.end()
        if held:
            self._put("text-delta", {"text": held, "agent": None})

    def on_trace(self, type_: str, data: dict[str, Any]) -> None:
        found = stream_event(type_, data)
        if found is not None:
            self.emit(*found)

    # -- approvals and cancellation ---------------------------------------------------------------

    def ask(self, question: str, timeout: float) -> str:
        """trust.ASK: runs in decide()'s worker thread; the question goes out on the loop."""
        future = asyncio.run_coroutine_threadsafe(self._approval(question, timeout), self.loop)
        try:
            return future.result(timeout + 5)
        except Exception:  # noqa: BLE001 - no answer, or the run is going away: denied
            future.cancel()
            return "deny"

    async def _approval(self, question: str, timeout: float) -> str:
        approval = secrets.token_hex(8)
        waiting: asyncio.Future[str] = self.loop.create_future()
        self.pending[approval] = waiting
        if self.run.g.signal.aborted:
            waiting.set_result("deny")
        await self.server.coord.add_pending(self.id, approval)
        self.emit("approval-pending", {
            "streamId": self.id, "approvalId": approval, "call": getattr(question, "callee", None),
            "caller": getattr(question, "caller", None), "rule": getattr(question, "rule", None),
            "args": getattr(question, "args", None), "question": str(question), "timeoutMs": round(timeout * 1000)})
        try:
            decision = await asyncio.wait_for(asyncio.shield(waiting), timeout)
        except TimeoutError:
            decision = "timeout"
        finally:
            self.pending.pop(approval, None)
            await self.server.coord.drop_pending(self.id, approval)
        if approval not in self.decided:  # cancel() told the client already, before the stream's end
            self.emit("approval-decided", {"approvalId": approval, "decision": decision})
        return DECISIONS.get(decision, "deny")

    def resolve(self, approval: str, decision: str) -> None:
        waiting = self.pending.get(approval)
        if waiting is not None and not waiting.done():
            waiting.set_result(decision)

    def cancel(self, reason: str) -> None:
        """Stop the run; every approval it waits for is denied."""
        self.run.g.signal.abort(reason)
        self._call_off_approvals()
        if self.task is not None and not self.task.done():
            self.task.cancel()

    @property
    def runs_agent(self) -> bool:
        """Its skill is an agent skill: the agent reads the inbox once the run gets to it."""
        offer = self.server.exposure.offers.get(self.skill)
        return offer is not None and offer.agent

    def take(self, kind: str, text: str) -> Answer:
        """A message for the run's agent (`kind` "steer" or "follow-up"), taken or refused: the one
        answer every replica gives, whichever the client asked."""
        untaken = self.inbox.untaken(self.runs_agent)
        if untaken is not None:
            return Answer(409, f"Stream '{self.id}' cannot take the message: {untaken}.")
        if self.inbox.full(kind):
            return Answer(429, f"{MAX_WAITING} {kind} messages already wait for the agent of stream "
                               f"'{self.id}'; send more once it has taken them.")
        if kind == "steer":
            self.steer(text)
        else:
            self.inbox.follow_up(text)
        return TAKEN

    def steer(self, text: str) -> None:
        """Steer the run's agent: its running tool calls stop, so the approvals they wait for are
        called off (`cancelled`); `text` is the model's next step."""
        self._call_off_approvals()
        self.inbox.steer(text)

    def _call_off_approvals(self) -> None:
        for approval, waiting in list(self.pending.items()):
            if not waiting.done():
                waiting.set_result("cancelled")
                # said now: the run's last event may follow before the waiting approval wakes up
                self.decided.add(approval)
                self.emit("approval-decided", {"approvalId": approval, "decision": "cancelled"})

    # -- the run ----------------------------------------------------------------------------------

    async def _execute(self, stopping: str | None = None) -> None:
        reporter = served.REPORT.set(self.on_trace)
        asker = ASK.set(self.ask if self.streaming else None)
        inbox = INBOX.set(self.inbox)
        result: Any = None
        error: BaseException | None = None
        limit = self.server.options.timeout
        try:
            # in this task (wait_for would start one more per run), under one timer for all runs
            async with self.server.deadlines(self.loop).limit_run():
                raw = await served.invoke(self.run, self.skill, self.args)
            result = json_result(raw, self.skill)[0]
        except TimeoutError:
            error = LimitError(f"The run took longer than the server's limit of {limit:g} s and was stopped "
                               "(agentapps serve --timeout).", skill=self.skill)
        except asyncio.CancelledError:
            error = InterruptedError_(stopping or self.run.g.signal.reason or "Cancelled.", signal_number=2)
        except Exception as exc:  # every failure is an outcome, never a crash
            if not isinstance(exc, AgentAppsError):
                log.warning("skill %s failed unexpectedly", self.skill, exc_info=True)
            error = exc
        finally:
            served.REPORT.reset(reporter)
            ASK.reset(asker)
            INBOX.reset(inbox)
        await self._finish(result, error)

    async def _finish(self, result: Any, error: BaseException | None) -> None:
        extra = {} if self.thread is None else {"threadId": self.thread}
        self.outcome = outcome(self.skill, result, error, started=self.run.started,
                               internals=self.run.g.internals, **extra)
        code = 0 if error is None else int(self.outcome["error"]["exit_code"])
        self._record(code)
        if self.thread is not None:
            try:
                await asyncio.shield(self._save_thread(code))
            except asyncio.CancelledError:
                pass  # shutting down: the record is written by the shielded task if it can be
        self.emit("result" if error is None else "error", self.outcome)
        if self.streaming:
            self.events.put_nowait(None)

    def _record(self, code: int) -> None:
        """The run-log record, written by the server's one batched writer (the answer never waits)."""
        batcher = self.server.run_log()
        if batcher is None:
            return
        try:
            entry = entry_for(skill=self.skill, args=self.args, internals=self.run.g.internals, exit_code=code,
                              error=self.outcome["error"], started=self.run.started)
        except Exception:  # the log must never fail the run
            log.warning("the run of %s was not added to the run log", self.skill, exc_info=True)
            return
        batcher.add(entry)

    async def _save_thread(self, code: int) -> None:
        await self.server.coord.save_thread(await self._thread_record(code))

    async def _thread_record(self, code: int) -> dict[str, Any]:
        found = await self.server.coord.thread(self.thread or "") or {
            "id": self.thread, "owner": self.owner, "skill": self.skill, "created": time.time(), "runs": 0}
        found.update(skill=self.skill, updated=time.time(), runs=int(found.get("runs") or 0) + 1,
                     status="ok" if code == 0 else f"exit {code}")
        return found
