"""OpenTelemetry traces of runs (docs/observability.md): off, and `opentelemetry` never imported,
unless the standard `OTEL_*` variables configure an exporter."""
