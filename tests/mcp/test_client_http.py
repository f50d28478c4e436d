"""agentapps as an MCP client over Streamable HTTP: declared headers reach the declared host only."""

from __future__ import annotations

import asyncio
import io
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from agentapps.cli.progress import Progress
from agentapps.errors import AgentAppsError, SkillError
from tests.fakes.mcpkit import FAKE, SECRET, run_calls, write_main

HEADERS = {"Authorization": "Bearer ${MCP_TEST_SECRET}"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_http(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, str(FAKE), "--http", str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """One SDK-written server over HTTP for the whole module (each test connects afresh)."""
    port = _free_port()
    proc = _start_http(port)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_http_tools_are_skills_and_get_the_declared_headers(project, http_server):
    write_main(project, {"web": {"url": http_server, "headers": HEADERS}})
    echo, added, auth = run_calls(project, [("web-echo", {"text": "over http"}), ("web-add", {"a": 1, "b": 2}),
                                            ("web-auth", {})])
    assert echo == "over http"
    assert added == {"sum": 3}
    assert auth == f"Bearer {SECRET}"  # the value read from the environment when the server was reached


def test_http_results_up_to_16_mib_pass_and_a_larger_one_is_a_clear_error(project, http_server):
    write_main(project, {"web": {"url": http_server}})
    failed, big, too_big, after = run_calls(project, [
        ("web-fail", {}), ("web-huge", {"size": 3_000_000}), ("web-huge", {"size": 17_000_000}),
        ("web-echo", {"text": "still here"})])
    assert isinstance(failed, SkillError) and "MCP server 'web' tool 'fail' failed: the widget is broken" in str(failed)
    assert big == "x" * 3_000_000  # the SDK's client reads 1 MiB per event unless told otherwise
    assert isinstance(too_big, SkillError) and "exited" not in str(too_big)  # an HTTP server did not exit
    assert "MCP server 'web' broke off 'huge'" in str(too_big) and "16777216 byte limit" in str(too_big)
    assert after == "still here"  # a new session


def test_an_http_server_that_went_away_is_reached_again_by_the_next_call(project):
    from agentapps.context.manager import invoke_root
    from agentapps.core.cleanup import run_cleanups

    port = _free_port()
    servers = [_start_http(port)]
    write_main(project, {"web": {"url": f"http://127.0.0.1:{port}/mcp", "startTimeout": 5}})
    root = project.boot()

    async def go() -> tuple[BaseException, str]:
        try:
            try:
                await invoke_root(root, "web-crash", {})
            except SkillError as exc:
                crashed = exc
            servers[0].wait(10)  # it exited in the call; it is back before the next one
            servers.append(await asyncio.to_thread(_start_http, port))
            return crashed, await invoke_root(root, "web-echo", {"text": "again"})
        finally:
            await run_cleanups(root.globals.internals)

    try:
        crashed, again = asyncio.run(go())
    finally:
        for proc in servers:
            proc.kill()
            proc.wait(10)
    assert "MCP server 'web' broke off 'crash'" in str(crashed) and "its session was closed" in str(crashed)
    assert again == "again"  # was "Session not found" on every later call of the run


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def _any(self) -> None:
        type(self).seen.append(str(self.headers))
        self.send_response(404)
        self.end_headers()

    do_GET = do_POST = do_DELETE = _any

    def log_message(self, *args: object) -> None:
        pass


def _serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def test_a_redirect_to_another_host_never_gets_the_credentials(project):
    other, other_port = _serve(_Recorder)

    class Redirect(BaseHTTPRequestHandler):
        def _any(self) -> None:
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:{other_port}/mcp")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _any

        def log_message(self, *args: object) -> None:
            pass

    redirect, port = _serve(Redirect)
    try:
        write_main(project, {"moved": {"url": f"http://127.0.0.1:{port}/mcp", "headers": HEADERS, "startTimeout": 5}})
        [failed] = run_calls(project, [("mcp://moved/echo", {})])
        assert isinstance(failed, AgentAppsError) and "MCP server 'moved'" in str(failed)
        assert "not followed" in str(failed)
        assert not any(SECRET in seen for seen in _Recorder.seen)
    finally:
        for server in (redirect, other):
            server.shutdown()
            server.server_close()


def _restart(proc: subprocess.Popen[bytes], port: int) -> subprocess.Popen[bytes]:
    proc.terminate()
    proc.wait(10)
    return _start_http(port)


def test_an_http_server_restarted_between_calls_gets_a_new_session_and_the_call_again(project):
    from agentapps.context.manager import invoke_root
    from agentapps.core.cleanup import run_cleanups

    port = _free_port()
    servers = [_start_http(port)]
    write_main(project, {"web": {"url": f"http://127.0.0.1:{port}/mcp", "startTimeout": 5}})
    root = project.boot()
    seen: list[tuple[str, dict]] = []
    stderr = io.StringIO()
    shown = Progress(stderr)

    def report(type_: str, data: dict) -> None:
        seen.append((type_, data))
        shown(type_, data)

    root.globals.internals.reporter = report

    async def go() -> list[object]:
        out: list[object] = []
        try:
            for text in ("one", "two", "three"):
                try:
                    out.append(await invoke_root(root, "web-echo", {"text": text}))
                except SkillError as exc:
                    out.append(exc)
                # restarted between calls: the session the client holds is unknown to the new process
                servers.append(await asyncio.to_thread(_restart, servers[-1], port))
        finally:
            await run_cleanups(root.globals.internals)
        return out

    try:
        one, two, three = asyncio.run(go())
    finally:
        for proc in servers:
            proc.kill()
            proc.wait(10)
    assert (one, two) == ("one", "two")  # the second call was sent again on a new session
    notes = [data for type_, data in seen if type_ == "mcp-reconnect"]
    assert [(n["server"], n["tool"]) for n in notes] == [("web", "echo")]
    assert "mcp: server 'web' no longer knew its session (did it restart?); 'echo' was sent again" in stderr.getvalue()
    # a second stale session in the run is a clear one-line error, not "Session not found"
    assert isinstance(three, SkillError) and "\n" not in str(three)
    assert "MCP server 'web' failed 2 times in this run (last: no longer knew its session" in str(three)
    assert "no new session is opened" in str(three)


class _Queueing(BaseHTTPRequestHandler):
    """A live session whose server answers an unknown tool with a 404 JSON-RPC error (the session
    stays known) and takes `inc` as queued work: it runs it, then answers 202 Accepted."""

    runs: ClassVar[int] = 0

    def _reply(self, status: int, body: dict | None = None, session: bool = False) -> None:
        import json

        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        if session:
            self.send_header("mcp-session-id", "s1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        import json

        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, id_ = message.get("method"), message.get("id")
        if method == "initialize":
            self._reply(200, {"jsonrpc": "2.0", "id": id_, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "queueing", "version": "1"}}}, session=True)
        elif id_ is None:
            self._reply(202)
        elif method == "tools/list":
            schema = {"type": "object", "properties": {}}
            self._reply(200, {"jsonrpc": "2.0", "id": id_, "result": {"tools": [
                {"name": "inc", "inputSchema": schema}, {"name": "probe", "inputSchema": schema}]}})
        elif method == "tools/call" and message["params"]["name"] == "inc":
            type(self).runs += 1
            self._reply(202)
        else:
            self._reply(404, {"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no such tool"}})

    def do_GET(self) -> None:
        self._reply(405)

    def do_DELETE(self) -> None:
        self._reply(200)

    def log_message(self, *args: object) -> None:
        pass


def test_a_404_that_did_not_lose_the_session_never_makes_a_later_call_run_twice(project):
    # seen failing: the 404 to `probe` left the connection marked as lost, so the 202 answering
    # `inc` (an INVALID_REQUEST from the SDK) was taken for a lost session and `inc` sent again
    server, port = _serve(_Queueing)
    try:
        write_main(project, {"q": {"url": f"http://127.0.0.1:{port}/mcp", "startTimeout": 5}}, seed=False)
        probed, inc = run_calls(project, [("q-probe", {}), ("q-inc", {})])
    finally:
        server.shutdown()
        server.server_close()
    assert isinstance(probed, AgentAppsError)
    assert isinstance(inc, AgentAppsError) and "202" in str(inc)
    assert _Queueing.runs == 1
