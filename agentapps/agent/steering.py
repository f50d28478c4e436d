"""Steering and follow-ups: messages a host sends to an agent while it runs.

A host (serve's `POST /steer` and `POST /follow-up`, the REPL's `/steer`) installs an `Inbox` in
`INBOX` before the run; the outermost agent of that run reads it. Every method runs on the run's
event loop thread (a host on another thread posts with `loop.call_soon_threadsafe`).

- `steer(text)`: the snippet of agent code that is running is cancelled at once (with the skill
  calls it was making, a `shell` command's whole process tree too), and its result tells the model
  it was interrupted; the turn's remaining tool calls are skipped; the text is the next user
  message, so the next model step sees it.
- `follow_up(text)`: queued; when the model would otherwise end the run (it answered without a
  tool call), the queued texts become the next user turn and the run goes on.

What is taken goes into the agent's trace (`steer`, `follow-up`: redacted like every trace entry)
and so out as events. Messages still queued when the run ends are not taken.

Hosts check a message with `checked_message` (one rule for every door) and may ask `untaken` whether
one sent now could still be taken: not once the run's agent has ended, nor when nothing reads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from agentapps.agent.code import cancellable, tool_result
from agentapps.errors import UsageError

if TYPE_CHECKING:
    from agentapps.agent.state import AgentRun

STEERED = ("Interrupted: the user steered the run (their message follows), so this snippet was "
           "stopped and the skill calls it was making were cancelled; `memory` is as it was after "
           "the last snippet that completed.")
SKIPPED = "The user steered the run (their message follows); this call did not run."
MAX_MESSAGE = 32_000  # characters of one steering or follow-up message
KINDS = ("steer", "follow-up")


def checked_message(kind: Any, text: Any) -> str:
    """`text` as a message of `kind` for a running agent; a UsageError says what is wrong."""
    if kind not in KINDS:
        raise UsageError("'kind' must be 'steer' or 'follow-up'.")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_MESSAGE:
        raise UsageError(f"'message' must be a non-empty string of at most {MAX_MESSAGE} characters.")
    return text
MAX_WAITING = 16  # messages of one kind waiting for the agent; more are not kept (a flood must not
#                   grow the host's memory, nor the one user turn they are all sent in, without end)


class Inbox:
    """The messages sent to one run's agent while it runs, and the snippet a steer stops."""

    def __init__(self) -> None:
        self.steers: list[str] = []
        self.follow_ups: list[str] = []
        self._running: asyncio.Task[Any] | None = None
        self.readers = 0  # agents reading it now (the run's outermost one; one after another)
        self.was_read = False

    def open(self) -> None:
        """An agent of the run starts reading the inbox."""
        self.readers += 1
        self.was_read = True

    def close(self) -> None:
        """That agent has ended."""
        self.readers -= 1

    def untaken(self, runs_agent: bool) -> str | None:
        """Why a message sent now would never be taken, or None. `runs_agent`: the run's skill is an
        agent skill, whose agent reads the inbox once the run gets to it."""
        if self.readers > 0:
            return None
        if self.was_read:
            return "its agent has already ended"
        return None if runs_agent else "it runs no agent"

    def full(self, kind: str) -> bool:
        """MAX_WAITING messages of `kind` ("steer" or "follow-up") wait already."""
        return len(self.steers if kind == "steer" else self.follow_ups) >= MAX_WAITING

    def steer(self, text: str) -> bool:
        """Interrupt the running snippet; `text` is processed in the next model step. False when
        MAX_WAITING steers wait already: the snippet still stops, but `text` is not kept."""
        kept = not self.full("steer")
        if kept:
            self.steers.append(text)
        if self._running is not None and not self._running.done():
            self._running.cancel()
        return kept

    def follow_up(self, text: str) -> bool:
        """Queue `text` as the next user turn, for when the model would end the run; False (not
        kept) when MAX_WAITING follow-ups wait already."""
        if self.full("follow-up"):
            return False
        self.follow_ups.append(text)
        return True

    def clear(self) -> None:
        self.steers.clear()
        self.follow_ups.clear()

    @property
    def steered(self) -> bool:
        """A steer waits for the next model step: tool calls of this turn do not run."""
        return bool(self.steers)

    async def run_snippet(self, snippet: Coroutine[Any, Any, dict[str, Any]], limit: int) -> dict[str, Any]:
        """Run one snippet so that a steer stops it (the model is told so)."""
        if self.steered:  # steered after the call was let through, before it started
            snippet.close()
            return tool_result(False, {"ok": False, "error": STEERED}, limit)
        return await cancellable(snippet, self._watch, STEERED, limit)

    def _watch(self, task: asyncio.Task[Any] | None) -> None:
        self._running = task

    def at_turn_end(self, run: AgentRun, directive: dict[str, Any], tool_calls: int) -> dict[str, Any]:
        """The turn-end directive with what is waiting added: steers always (even over an answer
        that would end the run), follow-ups when the model would otherwise end it. A run that
        `finish()` ended, or that stops for a limit, stays stopped."""
        answered = directive.get("stop") and run.stop_reason == "answered" and not run.finished
        ending = answered or (directive.get("input") and not tool_calls)  # persistent: it would wait
        taken: list[str] = []
        if self.steers and (answered or not directive.get("stop")):
            taken += self._take("steer", self.steers, run)
        if self.follow_ups and ending:
            taken += self._take("follow-up", self.follow_ups, run)
        if not taken:
            return directive
        if answered:  # the answer does not end the run after all
            run.stop_reason, run.result = None, None
            directive = {"continue": True}
        said = directive.get("message") if not directive.get("input") else None
        message = "\n\n".join(([said] if isinstance(said, str) and said else []) + taken)
        return {**{k: v for k, v in directive.items() if k not in ("input", "stop", "result")},
                "continue": True, "message": message}

    @staticmethod
    def _take(kind: str, queue: list[str], run: AgentRun) -> list[str]:
        texts = list(queue)
        queue.clear()
        for text in texts:
            run.trace.record(kind, text=text, turnNumber=run.turn)
        return texts


def directive_for(inbox: Inbox, run: AgentRun, event: dict[str, Any], directive: Any) -> Any:
    """The agent hook's answer to `event` with the inbox considered: a tool call of a steered
    turn is skipped; a turn's end takes what is waiting."""
    kind = event.get("type")
    if kind == "tool-call" and inbox.steered and not (isinstance(directive, dict) and directive.get("deny")):
        return {"deny": SKIPPED}
    if kind == "turn-end" and isinstance(directive, dict):
        calls = event.get("toolCalls")
        return inbox.at_turn_end(run, directive, calls if isinstance(calls, int) else 0)
    return directive


INBOX: ContextVar[Inbox | None] = ContextVar("agentapps_agent_inbox", default=None)
