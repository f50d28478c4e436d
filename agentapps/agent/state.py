"""One agent run's state and the hook policy: turns, steps, the loop guard, returns enforcement.

Directives a hook answers: `{"stop": True, "result": ...}` ends the run, `{"continue": True,
"message": ...}` asks the provider for another model turn, `{"deny": reason}` blocks a tool call,
`{"retry": True, "delay": s}` retries a failed model call, `None` means "as you were".
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from agentapps.agent import usage as u
from agentapps.agent.config import Limits
from agentapps.agent.context_edit import window_of
from agentapps.agent.period_budget import PeriodBudget
from agentapps.agent.script import Recorder
from agentapps.agent.spend import Spend, next_turn
from agentapps.agent.trace import Trace
from agentapps.errors import LimitError, ReturnsError
from agentapps.schemas.validation import validate

CONTINUE = "Continue with the task."


@dataclass
class TurnBuffer:
    """What the model said in the current turn (deltas are joined; a full message replaces them)."""

    slot: int | None = None
    deltas: list[str] = field(default_factory=list)
    full: str | None = None
    codes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.full if self.full is not None else "".join(self.deltas)


@dataclass
class AgentRun:
    """The state of one agent loop: its skill, limits, answer schema, trace, spend, turns and usage."""

    skill: str
    limits: Limits
    returns: dict[str, Any] | None
    trace: Trace
    schema_cache: dict[str, Any]
    recorder: Recorder | None = None
    spend: Spend | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the run's `model` config
    model: str = ""  # the model the provider is using now (it changes on fallback)
    periods: PeriodBudget | None = None  # the project's daily/monthly caps (model.budget)
    turn: int = 0
    steps: int = 0
    usage: dict[str, int] = field(default_factory=u.empty)
    turns_usage: list[dict[str, int]] = field(default_factory=list)
    turns_output: int = 0  # the sum of outputTokens over turns_usage
    finished: bool = False
    result: Any = None
    returns_failures: int = 0
    steps_exhausted: bool = False
    steps_owner: str | None = None  # whose maxSteps ran out, when it is a starter's (shared budget)
    stop_reason: str | None = None
    next_called: bool = False  # middleware mode: agent code ran `target.manager.next()`
    buffer: TurnBuffer = field(default_factory=TurnBuffer)
    _last_code: str | None = None
    _repeats: int = 0
    _call_started: float = 0.0

    # -- hook events --------------------------------------------------------------------------

    def handle(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Record `event` in the trace and answer it."""
        kind = str(event.get("type") or "")
        fields = {k: v for k, v in event.items() if k != "type"}
        handler = getattr(self, "on_" + kind.replace("-", "_"), None)
        if handler is None or kind.startswith("_"):
            self.trace.record(kind or "unknown", **fields)
            return None
        return handler(fields)  # type: ignore[no-any-return]

    def on_turn_start(self, fields: dict[str, Any]) -> None:
        if self.turn + 1 > self.limits.max_turns:  # the refused turn is not counted as taken
            self.stop_reason = "max_turns"
            raise LimitError(
                f"The agent for '{self.skill}' used all {self.turn} turns (model.maxTurns) "
                "without finishing; raise maxTurns or narrow the task.", skill=self.skill)
        starter = self.spend.over_turns() if self.spend is not None else None
        if starter is not None:  # the turns of the agents it started count too, and it spends its starter's
            self.stop_reason = "max_turns"
            raise LimitError(
                f"The agent for '{self.skill}' stopped before turn {self.turn + 1}: model.maxTurns of "
                f"'{starter.owner}' is {starter.max_turns:g}, and it and the agents it started have used "
                "all of them; raise it or narrow the task.", skill=self.skill)
        model = fields.get("model")
        self.model = model if isinstance(model, str) and model else self.model
        self._admit(fields.get("contextTokens"))
        self.turn += 1
        if self.spend is not None:
            self.spend.take_turn()
        self.buffer = TurnBuffer(self.recorder.reserve() if self.recorder else None)
        self.trace.record("turn-start", **{"turnNumber": self.turn, **fields})

    def on_message(self, fields: dict[str, Any]) -> None:
        text = str(fields.get("text") or "")
        if fields.get("delta"):
            self.buffer.deltas.append(text)
        else:
            self.buffer.full = text
        self.trace.record("message", **fields)

    def on_reasoning(self, fields: dict[str, Any]) -> None:
        self.trace.record("reasoning", **fields)

    def on_retry(self, fields: dict[str, Any]) -> None:
        self.buffer.deltas.clear()  # the retried turn streams its text again
        self.buffer.full = None
        self.trace.record("retry", **fields)

    def on_tool_call(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        tool, args = fields.get("tool"), fields.get("args")
        code = args.get("code") if isinstance(args, dict) else None
        self.buffer.codes.append(code if isinstance(code, str) else json.dumps(args))
        self._call_started = time.perf_counter()
        self.trace.record("tool-call", **fields)
        if tool != "invoke":
            return {"deny": f"There is no tool '{tool}'; the only tool is `invoke`."}
        return None

    def on_tool_result(self, fields: dict[str, Any]) -> None:
        ms = round((time.perf_counter() - self._call_started) * 1000, 1) if self._call_started else None
        result = fields.get("result")
        status = result.get("status") if isinstance(result, dict) else None
        self.trace.record("tool-result", **{**fields, "ms": ms, "status": status or "success"})

    def denied(self, fields: dict[str, Any], reason: str) -> None:
        """A tool call the hook refused: the provider reports no result for it, so the trace
        gets one (an error: emitted as `tool-error`)."""
        self.trace.record("tool-result", **{**fields, "ms": 0.0, "status": "error",
                                            "denied": reason})

    def on_error(self, fields: dict[str, Any]) -> dict[str, Any]:
        attempt = fields.get("attempt")
        attempt = attempt if isinstance(attempt, int) else 1
        if self.limits.persistent and fields.get("retryable") is not False:
            delay = min(self.limits.retry_cap, self.limits.retry_base * 2 ** max(attempt - 1, 0))
            self.trace.record("error", **fields, willRetry=True, delay=delay)
            return {"retry": True, "delay": delay}
        self.stop_reason = str(fields.get("reason") or "error")
        self.trace.record("error", **fields, willRetry=False)
        return {"stop": True}

    def on_turn_end(self, fields: dict[str, Any]) -> dict[str, Any]:
        said = fields.get("result")
        text = said if isinstance(said, str) else self.buffer.text
        report = u.normalize(fields.get("usage"))
        model = self._spent(fields.get("model"), report)
        self.turns_usage.append(report)
        self.turns_output += report["outputTokens"]
        cost = None
        if self.trace.spans is not None:  # the model call's span says what it cost
            price = u.price_for(model, self.config.get("pricing"), self.skill)
            cost = u.cost(report, price) if price is not None else None
        self.trace.record("turn-end", span_cost=cost, **{"turnNumber": self.turn, **fields, "usage": report,
                                                         "model": model, "result": text})
        if self.recorder is not None and self.buffer.slot is not None:
            self.recorder.fill(self.buffer.slot, text, self.buffer.codes, report,
                               model=model if model != self.config.get("id") else None)
        return self._directive(text)

    def on_context_full(self, fields: dict[str, Any]) -> None:
        self.trace.record("context-full", **{k: v for k, v in fields.items() if k != "conversation"})

    def on_context_edit(self, fields: dict[str, Any]) -> None:
        report = u.normalize(fields.get("usage"))
        model = self._spent(fields.get("model"), report)
        self.trace.record("context-edit", **{**fields, "usage": report, "model": model})
        summary = fields.get("summary")
        if self.recorder is not None and fields.get("by") == "model" and isinstance(summary, str):
            self.recorder.add_summary(summary, report)

    def on_fallback(self, fields: dict[str, Any]) -> None:
        to = fields.get("to")
        self.model = to if isinstance(to, str) and to else self.model
        self.trace.record("fallback", **fields)

    # -- spending and the context window --------------------------------------------------------

    def _spent(self, model: Any, report: dict[str, int]) -> str:
        """Count a usage report (of `model`, else the current model); returns the model."""
        used = model if isinstance(model, str) and model else self.model
        u.add(self.usage, report)
        if self.spend is not None:
            self.spend.add(used, report, u.price_for(used, self.config.get("pricing"), self.skill))
        return used

    def _admit(self, context_tokens: Any) -> None:
        """Refuse a turn whose request would not fit the window or whose cost passes a budget."""
        if isinstance(context_tokens, int) and not isinstance(context_tokens, bool):
            window = window_of(self.config, self.model, self.skill)
            if context_tokens > window:
                self.stop_reason = "context_window"
                edited = "even after context editing; lower model.contextEdit.compactAt or keepTurns" \
                    if self.config.get("contextEdit") else "set model.contextEdit: true to clear old " \
                    "tool results and summarize old turns"
                raise LimitError(
                    f"The conversation of the agent for '{self.skill}' needs about {context_tokens:,} "
                    f"tokens before turn {self.turn + 1}, over the {window:,}-token context window of "
                    f"'{self.model}' (model.contextWindow); {edited}, or narrow the task.", skill=self.skill)
        if self.spend is None:
            return
        price = u.price_for(self.model, self.config.get("pricing"), self.skill)
        capped = self.periods is not None and bool(self.periods.caps)
        if price is None and (capped or any(level.max_cost < float("inf") for level in self.spend.chain())):
            raise u.unpriced(self.model, self.skill)
        turn = next_turn(self.turns_usage, context_tokens, self.turns_output)
        try:
            self.spend.admit(turn, price, skill=self.skill, number=self.turn + 1)
            if self.periods is not None and capped and price is not None:
                self.periods.admit(self.spend.unrecorded(), u.cost(turn, price), skill=self.skill,
                                   number=self.turn + 1)
        except LimitError:
            self.stop_reason = "budget"
            raise

    def _directive(self, text: str) -> dict[str, Any]:
        if self.steps_exhausted:
            self.stop_reason = "max_steps"
            if self.steps_owner is not None:
                raise LimitError(
                    f"The agent for '{self.skill}' ran out of invoke calls: model.maxSteps of "
                    f"'{self.steps_owner}' counts the calls of every agent it starts, and all are used; "
                    "raise it or narrow the task.", skill=self.skill)
            raise LimitError(
                f"The agent for '{self.skill}' used all {self.limits.max_steps:g} invoke calls "
                "(model.maxSteps) without finishing; raise maxSteps or narrow the task.",
                skill=self.skill)
        if self.finished:
            self.stop_reason = "finished"
            return {"stop": True, "result": self.result}
        if self.buffer.codes:
            return {"continue": True}  # the provider sends the tool results back
        if self.returns is not None:
            return {"continue": True, "message": self._returns_failed(
                "You answered without calling ctx.manager.finish(value).")}
        if self.limits.persistent:  # the agent waits for the user's next message (the runner asks)
            return {"continue": True, "message": CONTINUE, "input": True}
        self.stop_reason = "answered"
        self.result = text
        return {"stop": True, "result": text}

    # -- the invoke tool ------------------------------------------------------------------------

    def admit_code(self, code: str) -> str | None:
        """Why this snippet must not run (told to the model), or None; raises when a limit ends
        the run."""
        normalized = " ".join(code.split())
        self._repeats = self._repeats + 1 if normalized == self._last_code else 1
        self._last_code = normalized
        if self._repeats > self.limits.loop_guard:
            self.stop_reason = "loop_guard"
            raise LimitError(
                f"The agent for '{self.skill}' kept sending the same code ({self._repeats} times "
                "in a row); stopped by the loop guard.", skill=self.skill)
        if self._repeats == self.limits.loop_guard:
            return (f"You sent the same code {self._repeats} times in a row, so it was not run "
                    "again. Change your approach or give your final answer.")
        if self.finished:
            return "ctx.manager.finish() was already called; this run is over and nothing more runs."
        if self.steps >= self.limits.max_steps:
            self.steps_exhausted = True
            return (f"maxSteps reached: all {self.limits.max_steps:g} invoke calls of this run "
                    "are used up, so this code did not run.")
        starter = self.spend.over_steps() if self.spend is not None else None
        if starter is not None:  # counting the calls of the agents it started, and its starter's
            self.steps_exhausted, self.steps_owner = True, starter.owner
            return (f"maxSteps reached: the {starter.max_steps:g} invoke calls that '{starter.owner}' allows "
                    "itself and the agents it starts together are used up, so this code did not run.")
        self.steps += 1
        if self.spend is not None:
            self.spend.take_step()
        return None

    def accept_finish(self, value: Any) -> str | None:
        """Take `finish(value)`, or say why the value is refused (a reminder counts)."""
        if self.returns is not None:
            try:
                validate(value, self.returns, self.schema_cache, skill=self.skill,
                         where="returns", error_cls=ReturnsError)
            except ReturnsError as exc:
                return self._returns_failed(f"ctx.manager.finish() got a value that does not "
                                            f"match the returns schema: {exc.message}")
        self.finished, self.result = True, value
        return None

    def _returns_failed(self, why: str) -> str:
        self.returns_failures += 1
        if self.returns_failures > self.limits.max_reminders:
            self.stop_reason = "returns"
            raise ReturnsError(
                f"The agent for '{self.skill}' did not return a value matching `returns` after "
                f"{self.limits.max_reminders} reminders. Last problem: {why}", skill=self.skill)
        schema = json.dumps(self.returns, separators=(",", ":"))
        return (f"{why} This skill must end by calling ctx.manager.finish(value) with a value "
                f"matching this JSON Schema: {schema} (reminder {self.returns_failures} of "
                f"{self.limits.max_reminders}).")
