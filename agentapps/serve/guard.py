"""The gate in front of every route of `agentapps serve`: the shared policy of `agentapps.net.gate`
(bearer tokens, Host, Origin) answered with serve's JSON error object, plus CORS.

- Each token is an identity: the owner of the streams and threads it starts. Without tokens
  (loopback only) every client is `local`.
- Only origins named by `--allow-origin` get CORS headers (CORS is closed by default).
- Open without a token (Host and Origin still checked): the page (`/`), `/healthz`,
  `/openapi.json`, `/hooks/...` (webhooks prove themselves with a signature instead) and preflights.
"""

from __future__ import annotations

import json
from typing import Any

from agentapps.net.gate import Gate, Refusal
from agentapps.serve.state import Options, identity

OPEN = ("/", "/healthz", "/openapi.json")


def _refusal(refused: Refusal) -> tuple[int, bytes]:
    body = {"ok": False, "error": {"type": refused.type, "message": refused.message,
                                   "exit_code": refused.exit_code, "skill": None, "file": None, "line": None}}
    return refused.status, json.dumps(body).encode()


class Guard:
    def __init__(self, app: Any, options: Options) -> None:
        self.app, self.options = app, options
        self.gate = Gate("serve", options.tokens, options.origins, options.loopback)

    def refusal(self, scope: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes] | None:
        path = scope.get("path", "")
        open_ = path in OPEN or path.startswith("/hooks/") or scope.get("method") == "OPTIONS"
        verdict = self.gate.check(headers, scope.get("scheme", "http"), token_required=not open_)
        state = scope.setdefault("state", {})
        if verdict.refusal is not None:
            state["identity"] = None
            return _refusal(verdict.refusal)
        state["identity"] = None if open_ else identity(verdict.token) if verdict.token else "local"
        return None

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
        if origin is None or origin == "null" or origin not in self.options.origins:  # null: the gate refuses it
            return []
        return [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin"),
                (b"access-control-allow-headers", b"authorization, content-type"),
                (b"access-control-allow-methods", b"GET, POST, DELETE")]
