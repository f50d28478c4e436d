"""A loopback OTLP/HTTP trace receiver that the real OpenTelemetry exporter talks to.

`POST /v1/traces` bodies are protobuf `ExportTraceServiceRequest`s (gzip-compressed when the
exporter says so), decoded with opentelemetry-proto's generated classes into flat `Span`s: ids as
hex, attributes and resource attributes as plain dicts. Every raw body is kept too (`bodies`), so
a test can look for a string in exactly what went over the wire. `wait_for` waits on a condition
(never a fixed sleep).
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    return None if kind is None else getattr(any_value, kind)


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root span
    kind: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error
    status_message: str
    start_ns: int
    end_ns: int


@dataclass
class FakeOtlp:
    port: int = 0
    spans: list[Span] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                fake._take(self.path, body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _take(self, path: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_spans in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    found.append(Span(
                        s.name, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), KINDS[s.kind],
                        {kv.key: _value(kv.value) for kv in s.attributes}, resource, s.status.code,
                        s.status.message, s.start_time_unix_nano, s.end_time_unix_nano))
        with self._changed:
            self.paths.append(path)
            self.bodies.append(body)
            self.spans.extend(found)
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[list[Span]], bool], timeout: float = 10.0) -> list[Span]:
        """The spans received once `condition(spans)` holds (AssertionError after `timeout` s)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self.spans):
                left = deadline - time.monotonic()
                if left <= 0:
                    names = [s.name for s in self.spans]
                    raise AssertionError(f"the receiver never got the spans expected; it has {names}")
                self._changed.wait(left)
            return list(self.spans)

    def named(self, name: str) -> list[Span]:
        return [s for s in self.spans if s.name == name]
