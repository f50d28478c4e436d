"""`agentapps mcp-server`: the project's skills to any MCP client, over stdio or Streamable HTTP.

It speaks the handshake protocol (2025-11-25 and earlier), which every client speaks today and in
which a server may ask its client questions mid-call (approvals). HTTP binds 127.0.0.1 unless told
otherwise; any other address needs a bearer token. Token, Host and Origin are checked as `serve`
checks them (`agentapps.net.gate`).
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentapps.errors import UsageError
from agentapps.lifecycle import server as front
from agentapps.net.gate import Gate, bound_to_loopback

WATCH_SECONDS = 1.0


class Guard:
    """ASGI gate in front of the MCP endpoint: the shared policy of `agentapps.net.gate` (bearer token,
    Host, Origin) answered as a JSON-RPC error, plus the handshake era's protocol versions."""

    def __init__(self, app: Any, token: str | None, origins: Sequence[str], loopback: bool) -> None:
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        self.app = app
        self.gate = Gate("mcp-server", [token] if token else [], origins, loopback)
        self.versions = set(HANDSHAKE_PROTOCOL_VERSIONS)

    def refusal(self, headers: dict[str, str], scheme: str) -> tuple[int, str] | None:
        refused = self.gate.check(headers, scheme).refusal
        if refused is not None:
            return refused.status, refused.message
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in self.versions:  # a 2026 client falls back to the handshake
            return 400, f"Protocol version {version[:40]} is not served; use the initialize handshake."
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            refused = self.refusal(headers, scope.get("scheme", "http"))
            if refused is not None:
                status, message = refused
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}})
                extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/json"), *extra]})
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


async def _stdio(server: Any) -> None:
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):  # the server's default options advertise listChanged
        await serve_loop(server, read, write, lifespan_state={})


async def _http(server: Any, sock: Any, token: str | None, origins: Sequence[str]) -> list[int]:
    from mcp.server.transport_security import TransportSecuritySettings

    # Guard checks Host and Origin (agentapps.net.gate), so the SDK's own DNS-rebinding check, which
    # it turns on by itself for three literal hosts and which admits other spellings and origins
    # (any port of http://localhost), is off: one check, one answer. It still checks Content-Type.
    host = sock.getsockname()[0]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = Guard(server.streamable_http_app(host=host, transport_security=security), token, origins,
                bound_to_loopback(host))
    return await front.run_web(app, sock, lambda host, port: f"agentapps mcp-server: serving http://{host}:{port}/mcp")


async def _main(g: Any, served: Any, server: Any, sock: Any, token: str | None, origins: Sequence[str]) -> None:
    task = asyncio.current_task()
    assert task is not None
    if sock is None:  # stdio (uvicorn handles the signals for HTTP)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
    watcher = asyncio.ensure_future(served.watch(WATCH_SECONDS))
    try:
        await front.until_stopped(g, _stdio(server) if sock is None else _http(server, sock, token, origins))
    finally:
        watcher.cancel()


def serve(*, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8080, allowed_tools: str | None = None,
          token: str | None = None, origins: Sequence[str] = (), approve: Sequence[str] = (),
          heartbeat: float = 10.0, cwd: Path | None = None) -> int:
    if transport not in ("stdio", "http"):
        raise UsageError(f"--transport must be stdio or http, got {transport!r}.")
    if transport == "http":
        front.check_listening("mcp-server", host, port, has_token=bool(token), token_env="AGENTAPPS_MCP_TOKEN")
    try:
        from agentapps.mcp_server.server import Served, build
    except ImportError:
        raise UsageError("agentapps mcp-server needs the MCP SDK: pip install 'agentapps[mcp]'.") from None

    # stdio: stdin is the transport, so it stays attached
    g, exposure = front.offered("mcp-server", cwd, allowed_tools, approve, detach_stdin=transport == "http")
    sock = front.listen(host, port) if transport == "http" else None
    served = Served(g, exposure, heartbeat)
    asyncio.run(_main(g, served, build(served), sock, token, origins))
    return 0
