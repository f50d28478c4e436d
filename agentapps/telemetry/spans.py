"""The process's tracer: one span per skill call, parented along the calls' contexts.

Imported only when traces are configured (`setup.start`); it is the one module, with
`telemetry.genai`, that imports the OpenTelemetry SDK and the OTLP/HTTP exporter. A span is kept on
the context it describes (`ctx._span`); a call's parent span is the nearest one up its callers
(`ctx.parent`), so parentage follows the onion whatever thread or loop a call runs on, with no
reliance on the SDK's implicit current span. A call with none above it is the run's root span: its
parent is the `traceparent` a server's request carried, if any.

Every attribute value passes the run's redactor first: a declared secret never reaches a span.
Callback refs (an agent's hook and invoke plumbing) get no span of their own: the agent's model and
tool spans (`telemetry.genai`) stand for them.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agentapps.core.logs import logger
from agentapps.telemetry.slots import RUN_ID, TRACEPARENT
from agentapps.version import __version__

if TYPE_CHECKING:
    from opentelemetry.context import Context as OtelContext

    from agentapps.secrets import Redactor
    from agentapps.telemetry.calls import Call

FLUSH_MS = 3000  # at process end and server stop: what is not out by then is dropped
EXPORT_TIMEOUT = 5.0  # seconds per export, unless OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT says otherwise
SKIPPED = "callback://"
PROPAGATOR = TraceContextTextMapPropagator()
log = logger("agentapps")


def clean(value: Any, redactor: Redactor) -> Any:
    """An attribute value as a span may hold it (str, bool, int, float or a list of one of them),
    with every string redacted."""
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [clean(v, redactor) if isinstance(v, (str, bool, int, float)) else redactor.redact(str(v))
                for v in value]
    return redactor.redact(str(value))


def attributes(values: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    return {key: clean(value, redactor) for key, value in values.items() if value is not None}


def parent_span(ctx: Call) -> Any:
    """The span of the nearest caller of `ctx` that has one, else None."""
    node = ctx.parent
    while node is not None:
        span = getattr(node, "_span", None)
        if span is not None:
            return span
        node = node.parent
    return None


def remote_parent(traceparent: str | None) -> OtelContext | None:
    """The context a W3C `traceparent` header names (None when absent or malformed)."""
    if not traceparent:
        return None
    found = PROPAGATOR.extract({"traceparent": traceparent})
    span = trace.get_current_span(found)
    return found if span.get_span_context().is_valid else None


def error_fields(exc: BaseException | None) -> tuple[str, int, str | None, str | None]:
    """(outcome, exit code, error type, message) of a call that ended with `exc` (None: it succeeded)."""
    if exc is None:
        return "ok", 0, None, None
    code = getattr(exc, "exit_code", 1)
    message = getattr(exc, "message", None) or str(exc)
    outcome = "interrupted" if isinstance(code, int) and code >= 128 else "error"
    return outcome, code if isinstance(code, int) else 1, type(exc).__name__, str(message)


class Tracing:
    """The tracer provider and its batch exporter, and the spans of skill calls."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("agentapps", __version__)
        self.closed = False

    @classmethod
    def from_environment(cls) -> Tracing:
        """Resource (`OTEL_SERVICE_NAME`, else `agentapps`) and exporter from the `OTEL_*` variables."""
        given = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
            "OTEL_RESOURCE_ATTRIBUTES", "")
        resource = Resource.create({} if given else {"service.name": "agentapps"})
        timed = any(os.environ.get(n) for n in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"))
        exporter = OTLPSpanExporter() if timed else OTLPSpanExporter(timeout=EXPORT_TIMEOUT)
        provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        found = cls(provider)
        atexit.register(found.close)
        return found

    # -- skill calls ------------------------------------------------------------------------------

    def begin(self, ctx: Call) -> Any:
        """Start the span of the call `ctx` (None for a callback ref); kept on `ctx`."""
        tool = ctx.tool
        if tool.uri is not None and tool.uri.startswith(SKIPPED):
            return None
        internals = ctx.globals.internals
        parent = parent_span(ctx)
        values: dict[str, Any] = {"agentapps.skill.name": tool.name, "agentapps.skill.kind": tool.kind,
                                  "agentapps.skill.uri": tool.uri, "agentapps.call.depth": ctx.depth,
                                  "agentapps.call.from_agent_code": (ctx.parent is not None and ctx.parent.untrusted) or None}
        kind = SpanKind.INTERNAL
        context: OtelContext | None
        if parent is not None:
            context = trace.set_span_in_context(parent)
        else:  # the run's root span
            context = remote_parent(internals.get(TRACEPARENT))
            kind = SpanKind.SERVER if internals.remote_caller else SpanKind.INTERNAL
            root, above = ctx, ctx.parent
            while above is not None:
                root, above = above, above.parent
            values["agentapps.run.id"] = internals.get(RUN_ID) or root.id
        span = self.tracer.start_span(tool.name, context=context, kind=kind,
                                      attributes=attributes(values, internals.redactor))
        ctx._span = span
        return span

    def end(self, ctx: Call, span: Any, exc: BaseException | None) -> None:
        """End the span of the call `ctx`: its outcome, exit code and, on failure, the error."""
        try:
            outcome, code, kind, message = error_fields(exc)
            redactor = ctx.globals.internals.redactor
            span.set_attributes(attributes({"agentapps.outcome": outcome, "agentapps.exit_code": code,
                                            "error.type": kind}, redactor))
            if message is not None:
                span.set_status(Status(StatusCode.ERROR, redactor.redact(message)))
            span.end()
        except Exception:  # tracing never fails a run
            log.debug("ending a span failed", exc_info=True)

    # -- propagation ------------------------------------------------------------------------------

    def traceparent(self, ctx: Call) -> str | None:
        """The W3C `traceparent` of the call `ctx` (its own span, else its nearest caller's)."""
        span = getattr(ctx, "_span", None) or parent_span(ctx)
        if span is None:
            return None
        carrier: dict[str, str] = {}
        PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        return carrier.get("traceparent")

    # -- the end ----------------------------------------------------------------------------------

    def flush(self, timeout_ms: int = FLUSH_MS) -> None:
        """Export what has ended so far, waiting at most `timeout_ms`; never raises."""
        try:
            self.provider.force_flush(timeout_ms)
        except Exception:
            log.debug("flushing spans failed", exc_info=True)

    def close(self) -> None:
        """At process end and server stop: flush (bounded), then stop the exporter's thread."""
        if self.closed:
            return
        self.closed = True
        self.flush()
        try:
            self.provider.shutdown()
        except Exception:
            log.debug("stopping the span exporter failed", exc_info=True)
