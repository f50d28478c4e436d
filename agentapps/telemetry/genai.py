"""An agent run's model and tool spans, after the OpenTelemetry GenAI semantic conventions.

Fed the agent's trace entries as they are recorded (already redacted; `agent/trace.py`):
- a model call (`chat {model}`) spans `turn-start` to the end of the model's answer: the first
  `tool-call` of the turn, else `turn-end`. It is closed at `turn-end`, when its usage is known
  (`gen_ai.usage.*`, `gen_ai.response.finish_reasons`, and `agentapps.cost` in dollars when the
  model has a price), or at an `error`;
- a tool call (`execute_tool invoke`) spans `tool-call` to `tool-result`. While it runs, the skills
  the agent's code calls are its children: its span is lent to the code's context.
Both are children of the agent skill's span.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from agentapps.core.logs import logger
from agentapps.telemetry.slots import TRACING
from agentapps.telemetry.spans import attributes

if TYPE_CHECKING:
    from agentapps.telemetry.calls import Call

# gen_ai.provider.name for the bundled providers; another provider skill is named as itself
PROVIDERS = {"agent-bedrock": "aws.bedrock", "agent-openai": "openai", "agent-anthropic": "anthropic"}
log = logger("agentapps")


class AgentSpans:
    """The model and tool spans of one agent run."""

    def __init__(self, ctx: Call, code_ctx: Call, provider: str, agent: str) -> None:
        tracing = ctx.globals.internals.get(TRACING)
        assert tracing is not None
        self.tracer = tracing.tracer
        self.redactor = ctx.globals.internals.redactor
        self.code_ctx = code_ctx
        span = getattr(ctx, "_span", None)
        self.parent = trace.set_span_in_context(span) if span is not None else None
        self.provider = PROVIDERS.get(provider, provider)
        self.agent = agent
        self.model: Any = None
        self.answered: int | None = None  # when the model's answer ended (the turn's first tool call)
        self.tool: Any = None

    def on(self, entry: dict[str, Any], cost: float | None = None) -> None:
        """Take one trace entry; never raises."""
        try:
            kind = entry.get("type")
            if kind == "turn-start":
                self._start_model(entry)
            elif kind == "tool-call":
                self._start_tool(entry)
            elif kind == "tool-result":
                self._end_tool(entry)
            elif kind == "turn-end":
                self._end_model(entry, cost)
            elif kind in ("error", "complete"):
                self._end_tool(entry)
                self._end_model(entry, None)
        except Exception:  # tracing never fails a run
            log.debug("an agent span failed", exc_info=True)

    def _start_model(self, entry: dict[str, Any]) -> None:
        self._end_model({}, None)  # a retried turn starts again
        model = entry.get("model")
        self.answered = None
        self.model = self.tracer.start_span(
            f"chat {model}" if model else "chat", context=self.parent, kind=SpanKind.CLIENT,
            attributes=attributes({
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
                "gen_ai.system": self.provider, "gen_ai.request.model": model,
                "gen_ai.agent.name": self.agent, "agentapps.agent.turn": entry.get("turnNumber"),
            }, self.redactor))

    def _end_model(self, entry: dict[str, Any], cost: float | None) -> None:
        span, self.model = self.model, None
        if span is None:
            return
        found = entry.get("usage")
        usage: dict[str, Any] = found if isinstance(found, dict) else {}
        reason = entry.get("stopReason")
        span.set_attributes(attributes({
            "gen_ai.response.model": entry.get("model"),
            "gen_ai.usage.input_tokens": usage.get("inputTokens"),
            "gen_ai.usage.output_tokens": usage.get("outputTokens"),
            "gen_ai.response.finish_reasons": [str(reason)] if reason else None,
            "agentapps.cost": cost,
        }, self.redactor))
        if entry.get("type") == "error":
            span.set_status(Status(StatusCode.ERROR, self.redactor.redact(str(entry.get("message") or "error"))))
            span.set_attribute("error.type", str(entry.get("reason") or "error"))
        span.end(end_time=self.answered)

    def _start_tool(self, entry: dict[str, Any]) -> None:
        if self.answered is None:
            self.answered = time.time_ns()
        self._end_tool({})
        tool = str(entry.get("tool") or "invoke")
        self.tool = self.tracer.start_span(
            f"execute_tool {tool}", context=self.parent, kind=SpanKind.INTERNAL,
            attributes=attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                                   "gen_ai.tool.call.id": entry.get("toolUseId"),
                                   "gen_ai.agent.name": self.agent}, self.redactor))
        self.code_ctx._span = self.tool  # the skills its code calls are its children

    def _end_tool(self, entry: dict[str, Any]) -> None:
        span, self.tool = self.tool, None
        if span is None:
            return
        try:
            del self.code_ctx._span
        except AttributeError:
            pass
        status = entry.get("status")
        if status:
            span.set_attribute("agentapps.outcome", "ok" if status == "success" else "error")
        if status == "error":
            span.set_status(Status(StatusCode.ERROR, self.redactor.redact(str(entry.get("denied") or "error"))))
        span.end()
