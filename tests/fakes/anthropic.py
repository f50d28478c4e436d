"""A scripted loopback fake of the Anthropic Messages API that the real `anthropic` SDK talks to.

Each `POST /v1/messages` consumes the next `Reply` of the script and is recorded (`fake.requests`,
with its parsed body and headers). A streamed request gets Server-Sent Events as Anthropic sends
them: `message_start` (with the input usage), per block `content_block_start`, deltas
(`text_delta`, or `input_json_delta` with the tool input in fragments) and `content_block_stop`,
`message_delta` (stop reason, output usage), `message_stop`; a `ping` on the way. Errors are
Anthropic's JSON error bodies with their HTTP status; `stream_error` sends an `error` event
mid-stream instead. Requests without the fake's key (in `x-api-key`, or `Authorization: Bearer`)
get 401 (`key=None`: a gateway that needs none). A request without `tools` (a context-editing
summary call) is answered with `fake.summary`.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass
class Reply:
    """One scripted model turn, or one scripted failure."""

    text: str | list[str] = ""  # a str is streamed word by word; a list gives the exact deltas
    tool_uses: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "input": {...}}
    stop_reason: str | None = None  # default: tool_use when there are tool uses, else end_turn
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 12, "output_tokens": 7})
    status: int | None = None  # an HTTP error reply with this status
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    fail_after: int | None = None  # stream: send this many events, then drop the connection
    stream_error: str | None = None  # stream: after `fail_after` events, an `error` event of this type

    @classmethod
    def error(cls, status: int, message: str = "", **headers: str) -> Reply:
        return cls(status=status, message=message or f"fake error {status}",
                   headers={k.replace("_", "-"): v for k, v in headers.items()})

    def events(self, model: str) -> list[tuple[str, dict[str, Any]]]:
        usage = {"input_tokens": 0, "output_tokens": 1, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0, **{k: v for k, v in self.usage.items() if k != "output_tokens"}}
        out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}), ("ping", {"type": "ping"})]
        index = 0
        pieces = self.text if isinstance(self.text, list) else re.findall(r"\S+\s*|\s+", self.text)
        if pieces:
            out.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}))
            out += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": p}}) for p in pieces]
            out.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        for n, use in enumerate(self.tool_uses, start=index):
            raw = json.dumps(use.get("input", {}))
            out.append(("content_block_start", {"type": "content_block_start", "index": n, "content_block": {
                "type": "tool_use", "id": use.get("id", f"toolu_{n}"), "name": use.get("name", "invoke"),
                "input": {}}}))
            for part in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                out.append(("content_block_delta", {"type": "content_block_delta", "index": n,
                                                    "delta": {"type": "input_json_delta", "partial_json": part}}))
            out.append(("content_block_stop", {"type": "content_block_stop", "index": n}))
        stop = self.stop_reason or ("tool_use" if self.tool_uses else "end_turn")
        out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": self.usage.get("output_tokens", 0)}}))
        out.append(("message_stop", {"type": "message_stop"}))
        return out


@dataclass
class Request:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    aborted: bool = False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropic

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client that hung up is no error
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        record = Request(self.path, json.loads(raw or b"{}"), {k.lower(): v for k, v in self.headers.items()})
        fake = self.server.fake
        if self.path.split("?", 1)[0] != "/v1/messages":
            self._error(404, f"Unknown path {self.path}")
            return
        if fake.key is not None and fake.key not in (record.headers.get("x-api-key"),
                                                     record.headers.get("authorization", "")[7:]):
            fake.record(record)
            self._error(401, "invalid x-api-key")
            return
        reply = fake.take(record)
        if reply.status:
            self._error(reply.status, reply.message, reply.headers)
            return
        self._stream(reply, record)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        body = {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: Reply, record: Request) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = reply.events(str(record.body.get("model")))
        if reply.fail_after is not None:
            events = events[: reply.fail_after]
            if reply.stream_error:
                events.append(("error", {"type": "error", "error": {"type": reply.stream_error,
                                                                    "message": reply.message or "Overloaded"}}))
        try:
            for name, data in events:
                frame = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
                self.wfile.flush()
            if reply.fail_after is not None and not reply.stream_error:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            record.aborted = True
            self.close_connection = True


class FakeAnthropic:
    """A scripted Messages API on 127.0.0.1; `base_url` is the server root (the SDK adds /v1)."""

    def __init__(self, script: list[Reply], *, key: str | None = "sk-ant-test-fake-key-0123") -> None:
        self.script = list(script)
        self.key = key
        self.summary = "SUMMARY: the earlier turns counted words."
        self.summaries = 0
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def take(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if "tools" not in request.body:
                self.summaries += 1
                return Reply(text=self.summary)
            if not self.script:
                return Reply.error(400, f"FakeAnthropic script exhausted ({len(self.requests) - 1})")
            return self.script.pop(0)

    def start(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        with contextlib.suppress(OSError):
            self._server.server_close()
