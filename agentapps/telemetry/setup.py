"""Whether the `OTEL_*` variables ask for traces, and starting the tracer when they do.

Traces are on when `OTEL_TRACES_EXPORTER` names `otlp`, or when it is unset and an OTLP endpoint
is set (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`);
`OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn them off. Only then is the SDK
imported. Configured but not installed: one warning naming the extra, and the run goes on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentapps.core.logs import logger

if TYPE_CHECKING:
    from agentapps.telemetry.spans import Tracing

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
MISSING = ("OpenTelemetry traces are configured (OTEL_* variables) but the SDK is not installed; "
           "install it with: pip install 'agentapps[otel]' (traces are off for this process).")


def configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces exported over OTLP."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()}
    if exporters:
        return "otlp" in exporters
    return any(env.get(name, "").strip() for name in ENDPOINTS)


def start() -> Tracing | None:
    """The process's tracer, or None when traces are off (nothing imported) or the SDK is missing."""
    if not configured():
        return None
    try:
        from agentapps.telemetry.spans import Tracing
    except ImportError:
        logger("agentapps").warning(MISSING)
        return None
    return Tracing.from_environment()
