"""Who may talk to a server we run (`serve`, `mcp-server --transport http`): bearer token, Host, Origin.

One policy for both doors; each door only adapts it to its protocol (its error body, its open
paths). Checked in this order, the first failure answering:

1. Host, only when bound to loopback without a token: it must name this machine, so a page whose
   DNS name rebinds to 127.0.0.1 cannot pass for the server's own. Admitted are the spellings a
   browser sends for a loopback page: `localhost` (any case), a dotted-quad 127.x.y.z and `[::1]`,
   each with or without a port. Everything else is refused: DNS names that merely start or end like
   one (`127.0.0.1.evil.com`, `localhost.evil.com`), `localhost.` with a trailing dot (a name the
   resolver may take to DNS; no browser sends it for `localhost`), `*.localhost`, other spellings of
   an address (`0177.0.0.1`, `2130706433`, `[0:0::1]`, `[::ffff:127.0.0.1]`), a bare `::1`, a Host
   with user info, and no Host at all.
2. Origin, when the request has one: the server's own (scheme, host and port equal to the request's
   scheme and Host, host compared without case) or exactly one of `--allow-origin`. `null` (sandboxed
   frames, files) is refused even if listed: any site can send it.
3. Bearer token, when the server has any and the door asks for one: `Authorization: Bearer TOKEN`
   compared in constant time against every token. 401 without one, 403 with a wrong one.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network, IPv6Address, ip_address
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^\[\]:@/\\\s]+))(?::(?P<port>[0-9]{1,5}))?")
_LOOPBACK_V4 = IPv4Network("127.0.0.0/8")


@dataclass(frozen=True)
class Refusal:
    """Why a request is turned away: the HTTP status, the error type and a one-line message."""

    status: int
    type: str  # "UsageError" (exit code 2) or "DeniedError" (exit code 3)
    message: str

    @property
    def exit_code(self) -> int:
        return 2 if self.type == "UsageError" else 3


@dataclass(frozen=True)
class Verdict:
    """A request let in (`refusal` None) with the token it showed, or turned away."""

    refusal: Refusal | None = None
    token: str | None = None  # the server's token the request presented; None if none was asked


def bound_to_loopback(host: str) -> bool:
    """Whether a listening address (`--host`) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, int | None] | None:
    """A Host header as (host lowercased, port), IPv6 without brackets; None if it is not one."""
    found = _HOST.fullmatch(value)
    if found is None:
        return None
    port = int(found["port"]) if found["port"] else None
    if port is not None and port > 65535:
        return None
    return (found["v6"] or found["name"]).lower(), port


@lru_cache(maxsize=256)  # asked on every request, with the same few Host values: parsing it cost ~10 us
def loopback_host(value: str) -> bool:
    """Whether a Host header names this machine in a spelling a browser sends for it (see above)."""
    parts = split_host(value)
    if parts is None:
        return False
    host = parts[0]
    if host == "localhost":
        return True
    bracketed = value.startswith("[")
    try:
        address = ip_address(host)
    except ValueError:
        return False
    if str(address) != host:  # one spelling per address: no other forms of it
        return False
    if isinstance(address, IPv6Address):
        return bracketed and address == IPv6Address("::1")
    return not bracketed and isinstance(address, IPv4Address) and address in _LOOPBACK_V4


def same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether an Origin header is the origin the request was sent to (its scheme and Host)."""
    target = split_host(host)
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return False
    if target is None or parts.scheme not in DEFAULT_PORTS or parts.hostname is None:
        return False
    if f"{parts.scheme}://{parts.netloc}" != origin or "@" in parts.netloc:  # an origin, nothing more
        return False
    scheme = scheme.lower()
    return (parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]) == (
        scheme, target[0], target[1] or DEFAULT_PORTS.get(scheme))


class Gate:
    """The policy of one server: its tokens, the Origins it allows, and whether it is bound to loopback.

    `door` names the command in messages ("serve", "mcp-server")."""

    def __init__(self, door: str, tokens: Iterable[str], origins: Iterable[str], loopback: bool) -> None:
        self.door, self.loopback = door, loopback
        self.tokens = tuple(t for t in tokens if t)  # an empty token would admit "Bearer " alone
        self.origins = frozenset(origins)

    def check(self, headers: Mapping[str, str], scheme: str, *, token_required: bool = True) -> Verdict:
        """Headers with lowercased names; `token_required` False for what a door serves openly."""
        host = headers.get("host", "")
        if self.loopback and not self.tokens and not loopback_host(host):
            return Verdict(Refusal(403, "DeniedError",
                                   f"This server answers only to a loopback Host (localhost, 127.0.0.1, [::1]), "
                                   f"not {host[:100]!r}."))
        origin = headers.get("origin")
        if origin is not None and not self.origin_ok(origin, scheme, host):
            return Verdict(Refusal(403, "DeniedError", f"Origin {origin[:100]} is not allowed "
                                                       f"(agentapps {self.door} --allow-origin)."))
        if not token_required or not self.tokens:
            return Verdict()
        return self.bearer(headers.get("authorization", ""))

    def origin_ok(self, origin: str, scheme: str, host: str) -> bool:
        if origin == "null":
            return False
        return origin in self.origins or same_origin(origin, scheme, host)

    def bearer(self, given: str) -> Verdict:
        """`given` is the Authorization header decoded as latin-1 (its bytes); tokens are UTF-8."""
        scheme, _, presented = given.strip().partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return Verdict(Refusal(401, "UsageError", "A bearer token is required (Authorization: Bearer TOKEN)."))
        found = None
        shown = presented.strip().encode("latin-1", "replace")  # the header's bytes, as the doors decode them
        for token in self.tokens:  # compare against all, so timing does not tell which matched
            if hmac.compare_digest(shown, token.encode()):
                found = token
        if found is None:
            return Verdict(Refusal(403, "DeniedError", "The bearer token is not valid for this server."))
        return Verdict(token=found)
