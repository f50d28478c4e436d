"""One gate, two doors: the same table of Host, Origin and token spellings sent to a real
`agentapps serve` and a real `agentapps mcp-server --transport http`; each row is let in or refused
by both alike, with the same status (200 in, 401 no token, 403 refused)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from agentapps.net.gate import Gate, loopback_host, same_origin
from tests.serve.conftest import make_project

TOKEN = "gate-t0ken"
ALLOWED = "https://app.example"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "gate-test", "version": "1"}}}

# (server, Host, Origin, Authorization, status); {port} is the server's port, {other} another one.
# "open" is bound to loopback without a token; "token" has TOKEN and --allow-origin ALLOWED and null.
ROWS = [
    # Host on an open loopback server: the names a browser sends for this machine, nothing else
    ("open", "127.0.0.1:{port}", None, None, 200),
    ("open", "localhost:{port}", None, None, 200),
    ("open", "localhost", None, None, 200),
    ("open", "LOCALHOST:{port}", None, None, 200),
    ("open", "[::1]:{port}", None, None, 200),
    ("open", "127.0.0.2:{port}", None, None, 200),
    ("open", "localhost.:{port}", None, None, 403),
    ("open", "evil.com", None, None, 403),
    ("open", "evil.com:{port}", None, None, 403),
    ("open", "127.0.0.1.evil.com:{port}", None, None, 403),
    ("open", "127.evil.com:{port}", None, None, 403),
    ("open", "localhost.evil.com:{port}", None, None, 403),
    ("open", "foo.localhost:{port}", None, None, 403),
    ("open", "0177.0.0.1:{port}", None, None, 403),
    ("open", "2130706433:{port}", None, None, 403),
    ("open", "[0:0:0:0:0:0:0:1]:{port}", None, None, 403),
    ("open", "[::ffff:127.0.0.1]:{port}", None, None, 403),
    ("open", "evil.com@localhost:{port}", None, None, 403),
    # Origin on an open loopback server: its own origin only
    ("open", "127.0.0.1:{port}", "http://127.0.0.1:{port}", None, 200),
    ("open", "localhost:{port}", "http://localhost:{port}", None, 200),
    ("open", "[::1]:{port}", "http://[::1]:{port}", None, 200),
    ("open", "127.0.0.1:{port}", "http://127.0.0.1:{other}", None, 403),
    ("open", "127.0.0.1:{port}", "https://127.0.0.1:{port}", None, 403),
    ("open", "127.0.0.1:{port}", "http://localhost:{port}", None, 403),
    ("open", "127.0.0.1:{port}", "http://localhost:{other}", None, 403),
    ("open", "127.0.0.1:{port}", "null", None, 403),
    ("open", "127.0.0.1:{port}", "http://evil.com", None, 403),
    ("open", "127.0.0.1:{port}", "http://127.0.0.1.evil.com:{port}", None, 403),
    ("open", "evil.com:{port}", "http://evil.com:{port}", None, 403),  # DNS rebinding: same origin, foreign Host
    # bearer tokens (the Host is then not what keeps a rebinding page out: it has no token)
    ("token", "127.0.0.1:{port}", None, None, 401),
    ("token", "127.0.0.1:{port}", None, f"Bearer {TOKEN}", 200),
    ("token", "127.0.0.1:{port}", None, f"bearer {TOKEN}", 200),
    ("token", "127.0.0.1:{port}", None, "Bearer wrong", 403),
    ("token", "127.0.0.1:{port}", None, f"Bearer {TOKEN}x", 403),
    ("token", "127.0.0.1:{port}", None, "Bearer", 401),
    ("token", "127.0.0.1:{port}", None, f"Basic {TOKEN}", 401),
    ("token", "evil.com:{port}", None, f"Bearer {TOKEN}", 200),
    # Origin with tokens: its own or exactly an --allow-origin; checked before the token
    ("token", "127.0.0.1:{port}", ALLOWED, f"Bearer {TOKEN}", 200),
    ("token", "127.0.0.1:{port}", "http://127.0.0.1:{port}", f"Bearer {TOKEN}", 200),
    ("token", "127.0.0.1:{port}", "https://app.example:8443", f"Bearer {TOKEN}", 403),
    ("token", "127.0.0.1:{port}", "http://app.example", f"Bearer {TOKEN}", 403),
    ("token", "127.0.0.1:{port}", "https://evil.example", f"Bearer {TOKEN}", 403),
    ("token", "127.0.0.1:{port}", "https://evil.example", None, 403),
    ("token", "127.0.0.1:{port}", "null", f"Bearer {TOKEN}", 403),  # listed, still refused
]


@dataclass
class Door:
    proc: subprocess.Popen[str]
    url: str  # http://127.0.0.1:PORT
    path: str

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def ask(self, headers: dict[str, str]) -> httpx2.Response:
        if self.path == "/mcp":
            headers = {"Accept": "application/json, text/event-stream", **headers}
            return httpx2.post(self.url + self.path, json=INITIALIZE, headers=headers, timeout=20)
        return httpx2.get(self.url + self.path, headers=headers, timeout=20)


def _launch(project: Any, path: str, *argv: str) -> Door:
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", *argv, "--port", "0"], cwd=project.root,
                            env=project.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"serving (http://[^/\s]+)", line)
        if found:
            return Door(proc, found.group(1), path)
    proc.kill()
    raise AssertionError(f"{argv[0]} did not start: " + "".join(seen))


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Door]]]:
    project = make_project(tmp_path_factory.mktemp("gate"))
    guarded = ("--token", TOKEN, "--allow-origin", ALLOWED, "--allow-origin", "null")
    started: dict[str, dict[str, Door]] = {"serve": {}, "mcp-server": {}}
    try:
        for server, extra in (("open", ()), ("token", guarded)):
            started["serve"][server] = _launch(project, "/skills", "serve", *extra)
            started["mcp-server"][server] = _launch(project, "/mcp", "mcp-server", "--transport", "http", *extra)
        yield started
    finally:
        for door in (d for by_server in started.values() for d in by_server.values()):
            door.proc.terminate()
            try:
                door.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                door.proc.kill()
                door.proc.communicate()


def _headers(door: Door, host: str, origin: str | None, auth: str | None) -> dict[str, str]:
    fill = {"port": door.port, "other": door.port + 1}
    headers = {"Host": host.format(**fill)}
    if origin is not None:
        headers["Origin"] = origin.format(**fill)
    if auth is not None:
        headers["Authorization"] = auth
    return headers


@pytest.mark.slow
@pytest.mark.parametrize(("server", "host", "origin", "auth", "status"), ROWS,
                         ids=[f"{r[0]}|{r[1]}|{r[2]}|{(r[3] or '').replace(TOKEN, 'TOKEN')}" for r in ROWS])
def test_both_doors_let_in_and_refuse_alike(doors, server, host, origin, auth, status):
    got = {}
    for name, by_server in doors.items():
        door = by_server[server]
        response = door.ask(_headers(door, host, origin, auth))
        got[name] = response.status_code
        if response.status_code != 200:
            says = response.json()
            message = says["error"]["message"]  # serve's error object and JSON-RPC's both have one
            assert ("jsonrpc" in says) == (name == "mcp-server"), says
            assert TOKEN not in message
    assert got == {"serve": status, "mcp-server": status}


@pytest.mark.parametrize(("value", "loopback"), [
    ("localhost", True), ("LocalHost:1", True), ("127.0.0.1", True), ("127.255.0.9:80", True),
    ("[::1]", True), ("[::1]:8080", True),
    ("", False), ("::1", False), ("[127.0.0.1]", False), ("127.0.0.1:99999", False), ("127.0.0.1:", False),
    ("localhost.", False), ("localhost..", False), ("127.0.0.1.", False), ("0x7f.0.0.1", False),
    ("127.1", False), ("a@localhost", False), ("localhost/x", False), ("localhost:80:80", False),
    ("10.0.0.1", False), ("[::2]", False), ("localhost\t", False),
])
def test_which_host_headers_name_this_machine(value, loopback):
    assert loopback_host(value) is loopback


@pytest.mark.parametrize(("origin", "scheme", "host", "same"), [
    ("http://localhost:8000", "http", "localhost:8000", True),
    ("http://localhost:8000", "http", "LOCALHOST:8000", True),
    ("http://localhost", "http", "localhost:80", True),
    ("https://example.com", "https", "example.com:443", True),
    ("http://localhost:8000", "https", "localhost:8000", False),
    ("http://localhost:8001", "http", "localhost:8000", False),
    ("http://localhost:8000/", "http", "localhost:8000", False),
    ("http://u@localhost:8000", "http", "localhost:8000", False),
    ("http://localhost:x", "http", "localhost:8000", False),
    ("null", "http", "localhost:8000", False),
    ("file://", "http", "localhost:8000", False),
])
def test_same_origin_is_scheme_host_and_port(origin, scheme, host, same):
    assert same_origin(origin, scheme, host) is same


def test_a_blank_token_is_no_token_and_tokens_are_compared_as_bytes():
    assert Gate("serve", [""], [], loopback=True).check({"host": "evil.com"}, "http").refusal is not None
    gate = Gate("serve", ["café"], [], loopback=False)
    header = "Bearer café".encode().decode("latin-1")  # as a door decodes the header's UTF-8 bytes
    assert gate.check({"authorization": header}, "http").token == "café"
