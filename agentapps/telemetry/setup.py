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


def bad_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """One line naming the endpoint variable the exporter would use when its value is not an
    http(s) URL with a host (the SDK would only fail at each export, naming neither), else None."""
    from urllib.parse import urlsplit

    env = os.environ if environ is None else environ
    for name in ENDPOINTS:
        value = env.get(name, "").strip()
        if not value:
            continue
        try:
            parts = urlsplit(value)
            _ = parts.port  # a port that is not a number is a ValueError
            ok = parts.scheme.lower() in ("http", "https") and bool(parts.hostname) and " " not in value
        except ValueError:
            ok = False
        if ok:
            return None
        return (f"{name} is {value[:200]!r}, which is not an http:// or https:// URL of an OTLP/HTTP collector "
                "(e.g. http://localhost:4318); traces are off for this process.")
    return None


def start() -> Tracing | None:
    """The process's tracer, or None when traces are off (nothing imported), the endpoint is not
    a URL (one warning naming the variable) or the SDK is missing."""
    if not configured():
        return None
    problem = bad_endpoint()
    if problem is not None:
        logger("agentapps").warning(problem)
        return None
    try:
        from agentapps.telemetry.spans import Tracing
    except ImportError:
        logger("agentapps").warning(MISSING)
        return None
    return Tracing.from_environment()
