"""HTTP client that connects only to policy-checked addresses, with redirect, size and time caps."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from agentapps.errors import LimitError, SkillError, UsageError
from agentapps.net.addresses import HostPolicy, SockAddr
from agentapps.net.urls import normalize_url

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# On a redirect to another origin every header may carry a credential (X-Api-Key, Private-Token,
# signed values...) except these, which say only what the client wants or sends.
CROSS_ORIGIN_SAFE = frozenset({"accept", "accept-language", "accept-encoding", "user-agent", "cache-control",
                               "pragma"})
BODY_HEADERS = frozenset({"content-type", "content-length", "content-encoding", "content-language",
                          "transfer-encoding"})
CHUNK = 64 * 1024


@dataclass(frozen=True)
class HttpResponse:
    """An HTTP response as the http skills return it."""

    status: int
    headers: dict[str, str]  # lowercase names; repeated headers joined with ", "
    body: bytes = field(repr=False)
    url: str  # the final URL, after redirects

    @property
    def text(self) -> str:
        charset = "utf-8"
        for param in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "charset" and value.strip():
                charset = value.strip().strip("\"'")
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def _remaining(deadline: float, what: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise LimitError(f"{what} took longer than the time limit; raise `timeout` if needed.")
    return left


class _DeadlineSocket(socket.socket):
    """Every receive waits at most until the request's deadline, not a fresh timeout."""

    deadline = float("inf")

    def recv_into(self, buffer: WriteableBuffer, nbytes: int = 0, flags: int = 0) -> int:
        self.settimeout(_remaining(self.deadline, "The HTTP request"))
        return super().recv_into(buffer, nbytes, flags)


class _DeadlineSSLSocket(ssl.SSLSocket):
    deadline = float("inf")

    def recv_into(self, buffer: WriteableBuffer, nbytes: int | None = None, flags: int = 0) -> int:
        self.settimeout(_remaining(self.deadline, "The HTTP request"))
        return super().recv_into(buffer, nbytes, flags)


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection whose connect() uses addresses already checked by the policy."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: bool,
        addresses: list[tuple[int, SockAddr]],
        connect_timeout: float,
        deadline: float,
    ) -> None:
        super().__init__(host, port, timeout=connect_timeout)
        self._connect_timeout = connect_timeout
        self._tls = tls
        self._addresses = addresses
        self._deadline = deadline

    def connect(self) -> None:
        error: OSError | None = None
        for family, sockaddr in self._addresses:  # never a name: no second DNS lookup
            sock = _DeadlineSocket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(min(self._connect_timeout, _remaining(self._deadline, "Connect")))
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sock.deadline = self._deadline
            sock.settimeout(_remaining(self._deadline, "Connect"))
            self.sock = self._wrap(sock) if self._tls else sock
            return
        if isinstance(error, TimeoutError):
            raise LimitError(
                f"Could not connect to {self.host}:{self.port} within {self._connect_timeout} s."
            )
        assert error is not None
        raise error

    def _wrap(self, sock: socket.socket) -> ssl.SSLSocket:
        context = ssl.create_default_context()
        context.sslsocket_class = _DeadlineSSLSocket
        try:
            # The certificate is checked against the hostname, not the address we dialled.
            tls = context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        assert isinstance(tls, _DeadlineSSLSocket)
        tls.deadline = self._deadline
        return tls


def _split(url: str) -> tuple[str, str, int, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"Invalid URL {url!r}: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UsageError(f"Refusing URL {url!r}: only http and https URLs are supported.")
    if not parts.hostname:
        raise UsageError(f"Invalid URL {url!r}: it has no host.")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80), target


def _read_body(
    response: http.client.HTTPResponse, url: str, max_bytes: int, deadline: float
) -> bytes:
    declared = response.getheader("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise LimitError(f"Response from {url} is {declared} bytes, over the {max_bytes}-byte cap.")
    chunks: list[bytes] = []
    total = 0
    while True:
        _remaining(deadline, f"Reading {url}")
        chunk = response.read1(min(CHUNK, max_bytes + 1 - total))  # one recv at most
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise LimitError(f"Response from {url} is over the {max_bytes}-byte cap.")
        chunks.append(chunk)


def _once(
    method: str, url: str, headers: dict[str, str], body: bytes | None,
    policy: HostPolicy, connect_timeout: float, deadline: float, max_bytes: int,
) -> tuple[HttpResponse, str | None]:  # fmt: skip
    scheme, host, port, target = _split(url)
    where = f"{scheme}://{host}:{port}{urlsplit(url).path}"  # no query: it may hold a token
    addresses = policy.check(host, port)
    conn = _PinnedConnection(
        host, port, tls=scheme == "https", addresses=addresses,
        connect_timeout=connect_timeout, deadline=deadline,
    )  # fmt: skip
    response: http.client.HTTPResponse | None = None
    try:
        try:
            conn.request(method, target, body=body, headers=headers)
        except (ValueError, http.client.InvalidURL) as exc:  # bad method, path or header text
            raise UsageError(f"Cannot send {method} {where}: {exc}.") from None
        response = conn.getresponse()
        names = {name.lower() for name in response.headers}
        got = {name: ", ".join(response.headers.get_all(name) or []) for name in names}
        location = got.get("location") if response.status in REDIRECT_STATUSES else None
        data = b"" if location else _read_body(response, where, max_bytes, deadline)
        return HttpResponse(response.status, got, data, url), location
    except TimeoutError:  # every socket timeout after connecting is capped by the deadline
        raise LimitError(f"Request to {where} took longer than the time limit.") from None
    except ssl.SSLError as exc:
        raise SkillError(f"TLS failed for {where}: {exc}.") from None
    except (OSError, http.client.HTTPException) as exc:
        raise SkillError(f"Request to {where} failed: {type(exc).__name__}: {exc}.") from None
    finally:
        if response is not None:
            response.close()  # holds its own reference to the socket
        conn.close()


def fetch(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: str | bytes | None = None,
    timeout: float = 60,
    connect_timeout: float = 10,
    max_bytes: int = 10 * 1024 * 1024,
    max_redirects: int = 5,
    policy: HostPolicy | None = None,
    check_hop: Callable[[str, str], None] | None = None,
) -> HttpResponse:
    """Send one request, following redirects; every hop's addresses are checked before connecting.

    Every URL is sent in its `normalize_url` spelling; on a redirect to another origin only the
    headers in CROSS_ORIGIN_SAFE (and the body's own, while the body is kept) go along.
    `check_hop(method, url)` may refuse a redirect (it raises) before anything is sent to it."""
    policy = HostPolicy.from_env() if policy is None else policy
    url = normalize_url(url)
    deadline = time.monotonic() + timeout
    method = method.upper()
    sent = dict(headers or {})
    data = body.encode() if isinstance(body, str) else body
    redirects = 0
    while True:
        response, location = _once(
            method, url, sent, data, policy, connect_timeout, deadline, max_bytes
        )
        if location is None:
            return response
        if redirects == max_redirects:
            host = urlsplit(url).hostname
            raise LimitError(f"Too many redirects (more than {max_redirects}), last from {host}.")
        redirects += 1
        next_url = normalize_url(urljoin(url, location))
        if response.status == 303 or (response.status in (301, 302) and method == "POST"):
            method = "GET" if method != "HEAD" else method
            data = None
            sent = {k: v for k, v in sent.items() if k.lower() not in BODY_HEADERS}
        if check_hop is not None:  # the caller's grant binds where the request really goes
            check_hop(method, next_url)
        if _split(next_url)[:3] != _split(url)[:3]:  # another origin: don't hand it our secrets
            keep = CROSS_ORIGIN_SAFE | (BODY_HEADERS if data is not None else frozenset())
            sent = {k: v for k, v in sent.items() if k.lower() in keep}
        url = next_url
