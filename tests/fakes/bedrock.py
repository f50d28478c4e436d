"""A scripted loopback fake of the Bedrock Converse API that a real boto3 client can talk to.

Each request (to `/model/{modelId}/converse` or `/converse-stream`) consumes the next `Reply`
of the script and is recorded (`fake.requests`). Run standalone for CLI tests in subprocesses:

    python -m tests.fakes.bedrock --script FILE.json --port-file PATH [--requests-file PATH]

The script file is a JSON list of `Reply` fields, e.g. `[{"error": "ThrottlingException"},
{"text": "hi"}]`. Serves until killed.

With a `Meter` (tests/fakes/bedrock_meter.py) the fake reports usage as the real service does:
counted from each request, split by the prompt cache, refused past a context window.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import socket
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote

from tests.fakes.bedrock_meter import Meter
from tests.fakes.eventstream import (
    converse_events,
    converse_response,
    event_frame,
    exception_frame,
)

ERROR_STATUS = {
    "AccessDeniedException": 403, "ExpiredTokenException": 403, "UnrecognizedClientException": 403,
    "ResourceNotFoundException": 404, "ModelTimeoutException": 408, "ValidationException": 400,
    "ServiceQuotaExceededException": 400, "ModelErrorException": 424, "ThrottlingException": 429,
    "ModelNotReadyException": 429, "InternalServerException": 500,
    "ServiceUnavailableException": 503,
}  # fmt: skip
_PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>converse|converse-stream)$")


@dataclass
class Reply:
    """One scripted model turn, or one scripted failure."""

    text: str | list[str] = ""  # a str is streamed word by word; a list gives the exact deltas
    tool_uses: list[dict[str, Any]] = field(default_factory=list)  # {"toolUse": {...}} or bare
    stop_reason: str | None = None  # default: tool_use when there are tool uses, else end_turn
    usage: dict[str, int] = field(default_factory=lambda: {"inputTokens": 12, "outputTokens": 7})
    error: str | None = None  # HTTP error reply: the x-amzn-ErrorType, e.g. ThrottlingException
    status: int | None = None  # HTTP status for `error` (default from ERROR_STATUS)
    message: str = ""  # error message
    fail_after: int | None = None  # stream: send this many events, then fail
    stream_exception: str | None = None  # ...with this exception frame; None = drop the connection
    delay: float = 0.0  # seconds between stream events

    @classmethod
    def http_error(cls, error: str, message: str = "", status: int | None = None) -> Reply:
        return cls(error=error, message=message or f"fake {error}", status=status)

    @classmethod
    def mid_stream(
        cls, exception: str | None = "throttlingException", *, after: int = 3, text: str = ""
    ) -> Reply:
        return cls(
            text=text or "partial answer that will be cut",
            fail_after=after,
            stream_exception=exception,
            message=f"fake mid-stream {exception}",
        )

    def blocks(self) -> list[dict[str, Any]]:
        """The assistant message content this reply stands for."""
        out: list[dict[str, Any]] = []
        text = "".join(self.text) if isinstance(self.text, list) else self.text
        if text:
            out.append({"text": text})
        for n, use in enumerate(self.tool_uses):
            spec = dict(use.get("toolUse", use))
            spec.setdefault("toolUseId", f"tooluse_fake{n}")
            out.append({"toolUse": {"input": {}, **spec}})
        return out

    def final_stop_reason(self) -> str:
        return self.stop_reason or ("tool_use" if self.tool_uses else "end_turn")

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """The converse-stream events for this reply (tool input split into fragments)."""
        deltas = self.text if isinstance(self.text, list) else None
        return converse_events(self.blocks(), self.final_stop_reason(), self.usage, deltas)


@dataclass
class RecordedRequest:
    """What the fake received: the operation, the decoded model id and the parsed JSON body."""

    operation: str
    model_id: str
    body: dict[str, Any]
    headers: dict[str, str]
    aborted: bool = False  # the client went away before the stream ended


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeBedrock


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        match = _PATH.match(self.path.split("?", 1)[0])
        if match is None:
            self._send_error(Reply.http_error("UnknownOperationException", status=404))
            return
        record = RecordedRequest(
            operation=match["op"],
            model_id=unquote(match["model"]),
            body=json.loads(raw or b"{}"),
            headers={k.lower(): v for k, v in self.headers.items()},
        )
        reply = self.server.fake.take(record)
        if reply.error:
            self._send_error(reply)
        elif record.operation == "converse-stream":
            self._stream(reply, record)
        elif reply.fail_after is not None:  # a failing non-streamed call just loses its connection
            self._drop()
        else:
            blocks, stop = reply.blocks(), reply.final_stop_reason()
            self._send_json(200, converse_response(blocks, stop, reply.usage))

    def _send_json(self, status: int, body: dict[str, Any], error: str | None = None) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        if error:
            self.send_header("x-amzn-ErrorType", error)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, reply: Reply) -> None:
        error = reply.error or "InternalServerException"
        status = reply.status or ERROR_STATUS.get(error, 400)
        self._send_json(status, {"message": reply.message or f"fake {error}"}, error)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client may be gone already
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, reply: Reply, record: RecordedRequest) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        events = reply.events()
        if reply.fail_after is not None:
            events = events[: reply.fail_after]
        try:
            for n, (event_type, payload) in enumerate(events):
                if n and reply.delay and self.server.fake.stopping.wait(reply.delay):
                    self._drop()
                    return
                self._chunk(event_frame(event_type, payload))
            if reply.fail_after is not None and reply.stream_exception is None:
                self._drop()
                return
            if reply.fail_after is not None and reply.stream_exception:
                self._chunk(exception_frame(reply.stream_exception, reply.message))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client closed the stream (cancellation) or the fake is stopping
            record.aborted = True
            self.close_connection = True


class FakeBedrock:
    """A scripted Bedrock runtime on 127.0.0.1; use as a context manager."""

    def __init__(self, script: list[Reply], *, requests_file: Path | None = None,
                 meter: Meter | None = None) -> None:
        self.script = list(script)
        self.meter = meter
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self._requests_file = requests_file
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def take(self, record: RecordedRequest) -> Reply:
        """Record a request and hand out the next reply (a ValidationException once exhausted)."""
        with self._lock:
            self.requests.append(record)
            if self._requests_file is not None:
                line = {"operation": record.operation, "model_id": record.model_id}
                with self._requests_file.open("a", encoding="utf-8") as out:
                    out.write(json.dumps({**line, "body": record.body}) + "\n")
            if self.meter is not None:
                return self._metered(record)
            if not self.script:
                n = len(self.requests) - 1
                return Reply.http_error(
                    "ValidationException", f"FakeBedrock script exhausted ({n})"
                )
            return self.script.pop(0)

    def _metered(self, record: RecordedRequest) -> Reply:
        meter = self.meter
        assert meter is not None
        if meter.too_long(record.body):
            return Reply.http_error("ValidationException", "Input is too long for requested model.")
        if not (record.body.get("toolConfig") or {}).get("tools"):
            meter.summaries += 1
            reply = Reply(text=meter.summary)
        elif not self.script:
            return Reply.http_error("ValidationException", "FakeBedrock script exhausted")
        else:
            reply = self.script.pop(0)
        if reply.error:
            return reply
        usage = meter.usage(record.model_id, record.body, reply.blocks())
        return dataclasses.replace(reply, usage=usage)

    def start(self) -> Self:
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the standalone process)."""
        try:
            self._server.serve_forever(0.02)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def close(self) -> None:
        self.stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", type=Path, required=True, help="JSON list of replies")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--requests-file", type=Path, help="append each request as a JSON line")
    args = parser.parse_args(argv)
    script = [Reply(**item) for item in json.loads(args.script.read_text("utf-8"))]
    fake = FakeBedrock(script, requests_file=args.requests_file)
    tmp = args.port_file.with_name(args.port_file.name + ".tmp")
    tmp.write_text(str(fake.port), encoding="utf-8")
    os.replace(tmp, args.port_file)  # readers never see a half-written port
    fake.serve_forever()


if __name__ == "__main__":
    main()
