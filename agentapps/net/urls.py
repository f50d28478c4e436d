"""One spelling per URL: what `http` sends and what allowed-tools constraints are matched on.

`HTTP://User:pw@Example.COM.:80/a/./b/../%7Ec?q#frag` becomes `http://example.com/a/~c?q`: the
scheme and host lowercased, an internationalised host in its IDNA (punycode) form, odd IPv4
spellings (`0177.0.0.1`, `2130706433`) as dotted quads, IPv6 compressed, the default port, the
user info and the fragment (never sent) dropped, dot segments removed, percent-escapes of
unreserved characters decoded and the others upper-cased, and anything else non-ASCII encoded.

A path with a dot segment hidden behind percent-encoding (`..%2F`, `%2E%2E%5C`, double-encoded
`%252e%252e%252f`) is refused: servers and proxies differ on whether they decode it before resolving
dots, so no constraint could say where it leads (`/public/..%2Fadmin` matches `/public/*`).
"""

from __future__ import annotations

import re
import socket
from ipaddress import IPv6Address, ip_address
from urllib.parse import quote, urlsplit

from agentapps.errors import UsageError

DEFAULT_PORTS = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SAFE = "/:@!$&'()*+,;=-._~%?"
_NUMERIC_V4 = re.compile(r"^[0-9a-fx.]+$")


def _escapes(text: str) -> str:
    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return quote(_ESCAPE.sub(fix, text), safe=_SAFE)


def _without_dots(path: str) -> str:
    """RFC 3986 remove_dot_segments, on a path that starts with '/'."""
    out: list[str] = []
    segments = path.split("/")[1:]
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        elif segment == ".":
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


def _hidden_dots(path: str) -> bool:
    """Whether decoding `path` (repeatedly, as a server that decodes twice would; `\\` read as `/`)
    gives a `.` or `..` segment: dots that `_without_dots` could not see."""
    for _ in range(4):
        decoded = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), path)
        if decoded == path:
            break
        path = decoded
    return any(segment in (".", "..") for segment in path.replace("\\", "/").split("/"))


def _host(host: str, url: str) -> str:
    host = host.rstrip(".")
    if not host:
        raise UsageError(f"Invalid URL {url!r}: it has no host.")
    try:
        ip = ip_address(host.split("%", 1)[0])
        return f"[{ip.compressed}]" if isinstance(ip, IPv6Address) else ip.compressed
    except ValueError:
        pass
    if _NUMERIC_V4.match(host):
        try:  # the spellings getaddrinfo accepts for IPv4: octal, hex, fewer parts, one number
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            pass
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise UsageError(f"Invalid URL {url!r}: the host is not a valid domain name.") from None
    return host.lower()


def normalize_url(url: str) -> str:
    """The URL as `http` sends it (UsageError for anything but a plain http(s) URL with a host)."""
    url = url.strip()
    if any(ch.isspace() or not ch.isprintable() for ch in url):  # urlsplit would drop some silently
        raise UsageError(f"Invalid URL {url!r}: it contains spaces or control characters; percent-encode them.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"Invalid URL {url!r}: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise UsageError(f"Refusing URL {url!r}: only http and https URLs are supported.")
    if not parts.hostname:
        raise UsageError(f"Invalid URL {url!r}: it has no host.")
    host = _host(parts.hostname, url)
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _without_dots(_escapes(parts.path or "/") if (parts.path or "/").startswith("/") else "/" + _escapes(parts.path))
    if _hidden_dots(path):
        raise UsageError(f"Refusing URL {url!r}: its path hides a '..' or '.' segment behind "
                         "percent-encoding (like '..%2F'); write the path it means.")
    query = _escapes(parts.query)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")
