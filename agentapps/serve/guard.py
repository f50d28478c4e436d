"""The gate in front of every route of `agentapps serve`: who the client is, and whether a browser
page of another site may talk to us.

- A bearer token is required when the server has any (`--token`; always when it is not bound to
  loopback); tokens are compared in constant time. 401 without one, 403 with a wrong one. Each
  token is an identity: the owner of the streams and threads it starts. Without tokens (loopback
  only) every client is `local`.
- `Origin`: a browser request from a page of another origin is refused (403) unless `--allow-origin`
  names it; only those get CORS headers (CORS is closed by default).
- Bound to loopback without a token, the `Host` must be a loopback name, so a DNS-rebinding page
  cannot pass itself off as same-origin.
- Open without a token: the page (`/`), `/healthz`, `/openapi.json`, and `/hooks/...` (webhooks prove
  themselves with a signature instead).
"""

from __future__ import annotations

import hmac
import json
from typing import Any
from urllib.parse import urlsplit

from agentapps.serve.state import Options, identity

OPEN = ("/", "/healthz", "/openapi.json")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _refusal(status: int, type_: str, message: str, code: int) -> tuple[int, bytes]:
    body = {"ok": False, "error": {"type": type_, "message": message, "exit_code": code, "skill": None,
                                   "file": None, "line": None}}
    return status, json.dumps(body).encode()


def _host_name(host: str) -> str:
    return (urlsplit(f"//{host}").hostname or "").lower()


def _loopback_host(name: str) -> bool:
    """A loopback name or address literal. A DNS name that merely starts with "127." (which a
    rebinding attacker can register) is not one: only the literal address counts."""
    if name in LOOPBACK_NAMES:
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    def __init__(self, app: Any, options: Options) -> None:
        self.app, self.options = app, options
        self.tokens = [(t.encode(), identity(t)) for t in options.tokens]

    def who(self, headers: dict[str, str]) -> tuple[str | None, tuple[int, bytes] | None]:
        if not self.tokens:
            return "local", None
        given = headers.get("authorization", "")
        if not given.lower().startswith("bearer "):
            return None, _refusal(401, "UsageError", "A bearer token is required (Authorization: Bearer TOKEN).", 2)
        presented = given[7:].strip().encode()
        found = None
        for token, who in self.tokens:  # compare against all, so timing does not tell which matched
            if hmac.compare_digest(presented, token):
                found = who
        if found is None:
            return None, _refusal(403, "DeniedError", "The bearer token is not valid for this server.", 3)
        return found, None

    def origin_ok(self, headers: dict[str, str], scheme: str) -> bool:
        origin = headers.get("origin")
        if origin is None:
            return True
        if origin in self.options.origins:
            return True
        return origin == f"{scheme}://{headers.get('host', '')}"  # the page this server served

    def refusal(self, scope: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes] | None:
        if self.options.loopback and not self.tokens and not _loopback_host(_host_name(headers.get("host", ""))):
            return _refusal(403, "DeniedError", "This server answers only to a loopback Host (localhost, 127.0.0.1).", 3)
        if not self.origin_ok(headers, scope.get("scheme", "http")):
            origin = headers.get("origin", "")[:100]
            return _refusal(403, "DeniedError", f"Origin {origin} is not allowed (agentapps serve --allow-origin).", 3)
        path = scope.get("path", "")
        if path in OPEN or path.startswith("/hooks/") or scope.get("method") == "OPTIONS":
            scope.setdefault("state", {})["identity"] = None
            return None
        who, refused = self.who(headers)
        scope.setdefault("state", {})["identity"] = who
        return refused

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = self.refusal(scope, headers)
        cors = self.cors(headers)
        if refused is None and scope.get("method") == "OPTIONS" and cors:  # a preflight we allow
            refused = (204, b"")
        if refused is not None:
            status, body = refused
            extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
            kind = [(b"content-type", b"application/json")] if body else []
            await send({"type": "http.response.start", "status": status, "headers": [*kind, *extra, *cors]})
            await send({"type": "http.response.body", "body": body})
            return
        if not cors:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *cors]}
            await send(message)

        await self.app(scope, receive, send_with_cors)

    def cors(self, headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
        origin = headers.get("origin")
        if origin is None or origin not in self.options.origins:
            return []
        return [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin"),
                (b"access-control-allow-headers", b"authorization, content-type"),
                (b"access-control-allow-methods", b"GET, POST, DELETE")]
