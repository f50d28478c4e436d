"""fetch() against loopback servers: round trips, SSRF refusals, redirects, size and time caps."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from agentapps.errors import DeniedError, LimitError, SkillError, UsageError
from agentapps.net.addresses import HostPolicy
from agentapps.net.http import fetch

ALLOW_LOOPBACK = HostPolicy("127.0.0.1")


class Handler(BaseHTTPRequestHandler):
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.route()

    do_POST = do_PUT = do_HEAD = do_GET

    def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {"Content-Length": str(len(body))}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def route(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.server.requests.append(self.path)
        if url.path == "/echo":
            echo = {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode(),
            }
            self.reply(
                200, json.dumps(echo).encode(), {"Content-Type": "application/json", "X-Multi": "a"}
            )
        elif url.path == "/redirect":
            self.reply(
                int(query.get("code", "302")), b"", {"Location": query["to"], "Content-Length": "0"}
            )
        elif url.path.startswith("/chain/"):
            left = int(url.path.rsplit("/", 1)[1])
            if left == 0:
                self.reply(200, b"done")
            else:
                self.reply(302, b"", {"Location": f"/chain/{left - 1}", "Content-Length": "0"})
        elif url.path == "/big":
            size, declare = int(query["n"]), query.get("declare", "1") == "1"
            self.reply(200, b"x" * size, {"Content-Length": str(size)} if declare else {})
        elif url.path == "/latin1":
            self.reply(
                200,
                "café".encode("latin-1"),
                {"Content-Type": "text/plain; charset=latin-1", "Content-Length": "4"},
            )
        elif url.path in ("/slow-body", "/slow-headers"):
            self.dribble(url.path == "/slow-headers")

    def dribble(self, in_headers: bool) -> None:
        """Send a byte every 0.2 s, forever as far as a client with a deadline can tell."""
        self.wfile.write(b"HTTP/1.0 200 OK\r\n")
        if not in_headers:
            self.wfile.write(b"Content-Length: 100\r\n\r\n")
        try:
            for _ in range(100):
                time.sleep(0.2)
                self.wfile.write(b"X-Slow: y\r\n" if in_headers else b"x")
        except OSError:
            pass  # the client gave up, as it should


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[str] = []
        self.connections = 0

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.connections += 1
        return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _serve() -> Iterator[LocalServer]:
    server = LocalServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def server() -> Iterator[LocalServer]:
    yield from _serve()


@pytest.fixture
def other_server() -> Iterator[LocalServer]:
    yield from _serve()


class AuditRecorder:
    """Records socket.connect and socket.getaddrinfo audit events while active."""

    def __init__(self) -> None:
        self.active = False
        self.events: list[tuple[str, Any]] = []
        sys.addaudithook(self.hook)  # hooks cannot be removed: install one per module

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event == "socket.connect":
            self.events.append((event, args[1]))
        elif event == "socket.getaddrinfo":
            self.events.append((event, args[0]))

    def connects(self) -> list[Any]:
        return [arg for event, arg in self.events if event == "socket.connect"]

    def lookups(self) -> list[Any]:
        return [arg for event, arg in self.events if event == "socket.getaddrinfo"]


@pytest.fixture(scope="module")
def recorder_instance() -> AuditRecorder:
    return AuditRecorder()


@pytest.fixture
def audit(recorder_instance: AuditRecorder) -> Iterator[AuditRecorder]:
    recorder_instance.events.clear()
    recorder_instance.active = True
    try:
        yield recorder_instance
    finally:
        recorder_instance.active = False


def test_get_round_trip_with_headers(server: LocalServer) -> None:
    response = fetch("GET", server.url("/echo?q=1"), headers={"X-Test": "yes"},
                     policy=ALLOW_LOOPBACK)  # fmt: skip
    assert response.status == 200
    assert response.url == server.url("/echo?q=1")
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-multi"] == "a"
    echo = json.loads(response.text)
    assert echo["method"] == "GET" and echo["path"] == "/echo?q=1"
    assert echo["headers"]["x-test"] == "yes"
    assert echo["headers"]["host"] == f"127.0.0.1:{server.port}"


@pytest.mark.parametrize("body", ["héllo wörld", "héllo wörld".encode()])
def test_post_round_trip_with_body(server: LocalServer, body: str | bytes) -> None:
    response = fetch("post", server.url("/echo"), body=body,
                     headers={"Content-Type": "text/plain"}, policy=ALLOW_LOOPBACK)  # fmt: skip
    echo = json.loads(response.body)
    assert echo["method"] == "POST"
    assert echo["body"] == "héllo wörld"
    assert echo["headers"]["content-type"] == "text/plain"


def test_text_uses_declared_charset(server: LocalServer) -> None:
    assert fetch("GET", server.url("/latin1"), policy=ALLOW_LOOPBACK).text == "café"


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "0177.0.0.1", "2130706433", "127.1", "[::ffff:7f00:1]",
             # (issue 22's attack suite) userinfo that names a public host, hex, padded v6
             "8.8.8.8@127.0.0.1", "user:8.8.8.8@localhost", "0x7f.0.0.1", "[0:0:0:0:0:ffff:7f00:1]"]
)
@pytest.mark.attack("SSRF spellings")
def test_default_policy_refuses_loopback_before_connecting(
    server: LocalServer, audit: AuditRecorder, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    monkeypatch.delenv("AGENTAPPS_HTTP_ALLOW", raising=False)
    with pytest.raises(DeniedError, match="not a public address") as info:
        fetch("GET", f"http://{host}:{server.port}/echo")
    assert info.value.exit_code == 3
    assert audit.connects() == []
    assert server.connections == 0 and server.requests == []


def test_env_allowlist_is_the_way_to_reach_loopback(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTAPPS_HTTP_ALLOW", "10.0.0.0/8, 127.0.0.1")
    assert fetch("GET", server.url("/chain/0")).body == b"done"


@pytest.mark.parametrize(
    "target", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::1]/",
               "http://2852039166/latest/meta-data/", "http://[::ffff:a9fe:a9fe]/"]
)
@pytest.mark.attack("SSRF spellings")
def test_redirect_to_private_address_is_refused_before_connecting(
    server: LocalServer, audit: AuditRecorder, target: str
) -> None:
    with pytest.raises(DeniedError, match="not a public address"):
        fetch("GET", server.url(f"/redirect?to={target}"), policy=ALLOW_LOOPBACK)
    assert audit.connects() == [("127.0.0.1", server.port)]


@pytest.mark.parametrize("target", ["file:///etc/passwd", "gopher://127.0.0.1:70/"])
@pytest.mark.attack("SSRF spellings")
def test_redirect_to_other_scheme_is_refused(server: LocalServer, target: str) -> None:
    with pytest.raises(UsageError, match="only http and https"):
        fetch("GET", server.url(f"/redirect?to={target}"), policy=ALLOW_LOOPBACK)


def test_redirect_chain_of_five_is_followed(server: LocalServer) -> None:
    response = fetch("GET", server.url("/chain/5"), policy=ALLOW_LOOPBACK)
    assert (response.status, response.body) == (200, b"done")
    assert response.url == server.url("/chain/0")
    assert len(server.requests) == 6


def test_redirect_chain_of_six_is_refused(server: LocalServer) -> None:
    with pytest.raises(LimitError, match="Too many redirects") as info:
        fetch("GET", server.url("/chain/6"), policy=ALLOW_LOOPBACK)
    assert info.value.exit_code == 4
    assert len(server.requests) == 6  # the sixth redirect is not followed


def test_max_redirects_zero_refuses_the_first_redirect(server: LocalServer) -> None:
    with pytest.raises(LimitError):
        fetch("GET", server.url("/chain/1"), max_redirects=0, policy=ALLOW_LOOPBACK)


@pytest.mark.parametrize(
    ("code", "method", "expected_method", "body_kept"),
    [
        (303, "POST", "GET", False),
        (303, "PUT", "GET", False),
        (302, "POST", "GET", False),
        (301, "POST", "GET", False),
        (307, "POST", "POST", True),
        (308, "PUT", "PUT", True),
        (302, "GET", "GET", False),
    ],
)
def test_redirect_method_rewriting(
    server: LocalServer, code: int, method: str, expected_method: str, body_kept: bool
) -> None:
    body = "payload" if method != "GET" else None
    url = server.url(f"/redirect?code={code}&to=/echo")
    echo = json.loads(fetch(method, url, body=body, policy=ALLOW_LOOPBACK).body)
    assert echo["method"] == expected_method
    assert echo["body"] == ("payload" if body_kept else "")
    assert ("content-length" in echo["headers"]) is body_kept


def test_credentials_are_stripped_when_redirect_changes_origin(
    server: LocalServer, other_server: LocalServer
) -> None:
    headers = {"Authorization": "Bearer s3cret", "Cookie": "sid=1", "X-Api-Key": "k3y", "Private-Token": "t0k",
               "X-Custom-Sig": "s1g", "Accept": "application/json", "User-Agent": "tester/1"}
    url = server.url(f"/redirect?to={other_server.url('/echo')}")
    echo = json.loads(fetch("GET", url, headers=headers, policy=ALLOW_LOOPBACK).body)
    sent = echo["headers"]
    for name in ("authorization", "cookie", "x-api-key", "private-token", "x-custom-sig"):
        assert name not in sent, name
    assert sent["accept"] == "application/json" and sent["user-agent"] == "tester/1"
    assert other_server.requests == ["/echo"]


def test_a_kept_body_keeps_its_content_type_across_origins(server: LocalServer, other_server: LocalServer) -> None:
    url = server.url(f"/redirect?code=307&to={other_server.url('/echo')}")
    headers = {"Content-Type": "text/plain", "X-Api-Key": "k3y"}
    echo = json.loads(fetch("POST", url, headers=headers, body="payload", policy=ALLOW_LOOPBACK).body)
    assert echo["body"] == "payload" and echo["headers"]["content-type"] == "text/plain"
    assert "x-api-key" not in echo["headers"]


def test_credentials_are_kept_on_same_origin_redirect(server: LocalServer) -> None:
    headers = {"Authorization": "Bearer s3cret", "Cookie": "sid=1"}
    url = server.url("/redirect?to=/echo")
    echo = json.loads(fetch("GET", url, headers=headers, policy=ALLOW_LOOPBACK).body)
    assert echo["headers"]["authorization"] == "Bearer s3cret"
    assert echo["headers"]["cookie"] == "sid=1"


@pytest.mark.parametrize("declare", ["1", "0"])
def test_oversized_body_is_refused(server: LocalServer, declare: str) -> None:
    with pytest.raises(LimitError, match="1000-byte cap"):
        fetch("GET", server.url(f"/big?n=5000&declare={declare}"), max_bytes=1000,
              policy=ALLOW_LOOPBACK)  # fmt: skip


def test_body_exactly_at_the_cap_is_accepted(server: LocalServer) -> None:
    url = server.url("/big?n=1000&declare=0")
    assert len(fetch("GET", url, max_bytes=1000, policy=ALLOW_LOOPBACK).body) == 1000


@pytest.mark.parametrize("path", ["/slow-body", "/slow-headers"])
def test_slow_response_hits_total_timeout(server: LocalServer, path: str) -> None:
    start = time.monotonic()
    with pytest.raises(LimitError, match="time limit"):
        fetch("GET", server.url(path), timeout=0.5, policy=ALLOW_LOOPBACK)
    assert time.monotonic() - start < 1.5


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/x", "file:///etc/passwd", "javascript:alert(1)", "//127.0.0.1/",
            "http:///nohost", "http://127.0.0.1:99999/"]
)  # fmt: skip
def test_bad_urls_are_usage_errors(audit: AuditRecorder, url: str) -> None:
    with pytest.raises(UsageError):
        fetch("GET", url, policy=ALLOW_LOOPBACK)
    assert audit.events == []


def test_connect_uses_only_the_checked_address(server: LocalServer, audit: AuditRecorder) -> None:
    fetch("GET", server.url("/chain/2"), policy=ALLOW_LOOPBACK)
    assert audit.connects() == [("127.0.0.1", server.port)] * 3
    assert audit.lookups() == ["127.0.0.1"] * 3  # one resolution per hop, none inside connect


def test_https_to_plain_server_fails_cleanly(server: LocalServer, audit: AuditRecorder) -> None:
    with pytest.raises(SkillError, match="TLS failed"):
        fetch("GET", f"https://127.0.0.1:{server.port}/", policy=ALLOW_LOOPBACK)
    assert audit.connects() == [("127.0.0.1", server.port)]


def test_connection_refused_is_a_skill_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(SkillError, match="failed"):
        fetch("GET", f"http://127.0.0.1:{port}/", policy=ALLOW_LOOPBACK)


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET\r\nX-Injected: 1", "/echo", {}),
        ("GET", "/echo?a b", {}),
        ("GET", "/echo", {"X-Bad": "a\r\nX-Injected: 1"}),
    ],
)
def test_injection_in_method_path_or_headers_is_a_usage_error(
    server: LocalServer, method: str, path: str, headers: dict[str, str]
) -> None:
    with pytest.raises(UsageError):
        fetch(method, server.url(path), headers=headers, policy=ALLOW_LOOPBACK)
    assert server.requests == []


def test_connect_timeout_is_a_limit_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        try:
            for _ in range(3):  # fill the accept queue so the next SYN goes unanswered
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
                fillers.append(filler)
            start = time.monotonic()
            with pytest.raises(LimitError, match="Could not connect"):
                fetch("GET", f"http://127.0.0.1:{port}/", connect_timeout=0.3,
                      policy=ALLOW_LOOPBACK)  # fmt: skip
            assert time.monotonic() - start < 1.0
        finally:
            for filler in fillers:
                filler.close()


def test_named_host_connects_to_the_address_it_resolved(
    server: LocalServer, audit: AuditRecorder
) -> None:
    infos = socket.getaddrinfo("localhost", server.port, type=socket.SOCK_STREAM)
    resolved = {info[4] for info in infos}
    if ("127.0.0.1", server.port) not in resolved:
        pytest.skip("localhost does not resolve to 127.0.0.1 here")
    audit.events.clear()
    url = f"http://localhost:{server.port}/echo"
    echo = json.loads(fetch("GET", url, policy=HostPolicy("localhost")).body)
    assert echo["headers"]["host"] == f"localhost:{server.port}"  # virtual hosting still works
    assert audit.lookups() == ["localhost"]  # resolved once, by the policy
    assert audit.connects() and all(addr in resolved for addr in audit.connects())


def test_error_messages_do_not_repeat_the_query_string(server: LocalServer) -> None:
    with pytest.raises(LimitError) as info:
        fetch("GET", server.url("/big?n=5000&token=s3cret"), max_bytes=10, policy=ALLOW_LOOPBACK)
    assert "s3cret" not in str(info.value)
