"""A scripted loopback fake of the OpenAI Chat Completions API that the real `openai` SDK talks to.

Each `POST /v1/chat/completions` consumes the next `Reply` of the script and is recorded
(`fake.requests`, with its parsed body and headers). A streamed request (`stream: true`) gets
Server-Sent Events as OpenAI sends them: a role chunk, text deltas, tool-call deltas with the
arguments in fragments, a chunk with `finish_reason`, a usage chunk when the request asked for it
(`stream_options.include_usage`), then `data: [DONE]`. Errors are OpenAI's JSON error bodies with
their HTTP status. Requests without `Authorization: Bearer <key>` are refused with 401 when the
fake has a key. `POST /v1/responses` (the Responses API) streams the same reply as
`response.*` events. A request without `tools` (a context-editing summary call) is answered with
`fake.summary` and counted, without taking a reply of the script.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_denied",
               404: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error",
               503: "server_error"}


@dataclass
class Reply:
    """One scripted model turn, or one scripted failure."""

    text: str | list[str] = ""  # a str is streamed word by word; a list gives the exact deltas
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "arguments": {...}}
    finish_reason: str | None = None  # default: tool_calls when there are tool calls, else stop
    # None: metered from the request, about 4 characters a token, as a real server counts them
    usage: dict[str, int] | None = field(default_factory=lambda: {"prompt_tokens": 12, "completion_tokens": 7})
    status: int | None = None  # an HTTP error reply with this status
    code: str | None = None  # the error body's `code`
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # extra headers of an error reply
    fail_after: int | None = None  # stream: send this many chunks, then drop the connection
    stream_error: str | None = None  # Responses API: an `error` event with this code after `fail_after` events

    @classmethod
    def error(cls, status: int, message: str = "", code: str | None = None, **headers: str) -> Reply:
        return cls(status=status, code=code, message=message or f"fake error {status}",
                   headers={k.replace("_", "-"): v for k, v in headers.items()})

    def deltas(self) -> list[str]:
        if isinstance(self.text, list):
            return self.text
        return re.findall(r"\S+\s*|\s+", self.text)

    def chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        model, include_usage = str(body.get("model")), bool((body.get("stream_options") or {}).get("include_usage"))
        def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000,
                    "model": model, "choices": choices}

        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({"content": piece}) for piece in self.deltas()]
        for n, call in enumerate(self.tool_calls):
            raw = json.dumps(call.get("arguments", {}))
            cut = len(raw) // 2
            out.append(chunk({"tool_calls": [{"index": n, "id": call.get("id", f"call_{n}"), "type": "function",
                                              "function": {"name": call.get("name", "invoke"), "arguments": ""}}]}))
            for part in (raw[:cut], raw[cut:]):
                out.append(chunk({"tool_calls": [{"index": n, "function": {"arguments": part}}]}))
        out.append(chunk({}, self.finish_reason or ("tool_calls" if self.tool_calls else "stop")))
        if include_usage:
            usage = dict(self.usage) if self.usage is not None else {
                "prompt_tokens": len(json.dumps(body.get("messages"))) // 4 + len(json.dumps(body.get("tools"))) // 4,
                "completion_tokens": sum(len(json.dumps(c.get("choices"))) for c in out) // 40}
            usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
            cached = usage.pop("cached_tokens", 0)
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
            out.append({**chunk(None), "usage": usage})
        return out


    def response_events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The Responses API events for this reply (`POST /v1/responses`, `stream: true`)."""
        usage = dict(self.usage) if self.usage is not None else {
            "prompt_tokens": len(json.dumps(body.get("input"))) // 4 + len(json.dumps(body.get("tools"))) // 4,
            "completion_tokens": 10}
        seq = iter(range(10_000))
        response = {"id": "resp_fake", "object": "response", "created_at": 1_700_000_000, "model": body.get("model"),
                    "status": "in_progress", "output": [], "tools": [], "parallel_tool_calls": True,
                    "tool_choice": "auto"}
        out: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
        index = 0
        pieces = self.deltas()
        if pieces:
            message = {"type": "message", "id": "msg_fake", "role": "assistant", "status": "in_progress", "content": []}
            out.append({"type": "response.output_item.added", "output_index": 0, "item": message})
            out += [{"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": 0,
                     "content_index": 0, "delta": piece, "logprobs": []} for piece in pieces]
            index = 1
        for n, call in enumerate(self.tool_calls, start=index):
            raw = json.dumps(call.get("arguments", {}))
            item = {"type": "function_call", "id": f"fc_{n}", "call_id": call.get("id", f"call_{n}"),
                    "name": call.get("name", "invoke"), "arguments": "", "status": "in_progress"}
            out.append({"type": "response.output_item.added", "output_index": n, "item": item})
            for part in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                out.append({"type": "response.function_call_arguments.delta", "item_id": f"fc_{n}",
                            "output_index": n, "delta": part})
            out.append({"type": "response.output_item.done", "output_index": n,
                        "item": {**item, "arguments": raw, "status": "completed"}})
        cached = usage.get("cached_tokens", 0)
        done = {**response, "status": "completed", "usage": {
            "input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0),
            "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}}
        out.append({"type": "response.completed", "response": done})
        return [{**event, "sequence_number": next(seq)} for event in out]


@dataclass
class Request:
    """What the fake received."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    aborted: bool = False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI

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
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/chat/completions", "/v1/responses"):
            self._json(404, {"error": {"message": f"Unknown path {self.path}", "type": "invalid_request_error"}})
            return
        if fake.key is not None and record.headers.get("authorization") != f"Bearer {fake.key}":
            fake.record(record)
            self._json(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                       "code": "invalid_api_key"}})
            return
        reply = fake.take(record)
        if reply.status:
            error = {"message": reply.message, "type": ERROR_TYPES.get(reply.status, "api_error"),
                     "code": reply.code}
            self._json(reply.status, {"error": error}, reply.headers)
            return
        if not record.body.get("stream"):
            self._json(400, {"error": {"message": "the fake only streams", "type": "invalid_request_error"}})
            return
        if path == "/v1/responses":
            events = reply.response_events(record.body)
            if reply.stream_error:  # the call fails after it began: an `error` event, then the end
                events = [*events[: reply.fail_after or 1], {"type": "error", "code": reply.stream_error,
                                                             "message": reply.message or "fake failure",
                                                             "sequence_number": 99}]
            frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
            self._stream_frames(frames, None if reply.stream_error else reply.fail_after, record)
            return
        self._stream(reply.chunks(record.body), reply.fail_after, record)

    def _json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: list[dict[str, Any]], fail_after: int | None, record: Request) -> None:
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
        self._stream_frames(events, fail_after, record)

    def _stream_frames(self, events: list[bytes], fail_after: int | None, record: Request) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for n, event in enumerate(events):
                if n and self.server.fake.delay:
                    time.sleep(self.server.fake.delay)
                if fail_after is not None and n == fail_after:
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            record.aborted = True
            self.close_connection = True


class FakeOpenAI:
    """A scripted Chat Completions server on 127.0.0.1; `base_url` ends in /v1."""

    def __init__(self, script: list[Reply], *, key: str | None = "sk-test-fake-key-0123456789") -> None:
        self.script = list(script)
        self.key = key
        self.summary = "SUMMARY: the earlier turns counted words."  # the answer to a call without tools
        self.summaries = 0
        self.delay = 0.0  # seconds between streamed chunks
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def take(self, request: Request) -> Reply:
        """Record a request and hand out the next reply (a 400 once the script is used up)."""
        with self._lock:
            self.requests.append(request)
            if "tools" not in request.body:  # a context-editing summary call
                self.summaries += 1
                return Reply(text=self.summary, usage=None)
            if not self.script:
                return Reply.error(400, f"FakeOpenAI script exhausted ({len(self.requests) - 1})")
            return self.script.pop(0)

    def start(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        with contextlib.suppress(OSError):
            self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
