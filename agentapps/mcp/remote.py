"""The Streamable HTTP transport: declared headers go to the declared origin and nowhere else,
one message may be as long as over stdio (16 MiB; the SDK reads 1 MiB per event by default), and
and the answer to each request that named our session tells the connection whether the server
still knows it (a 404: it does not)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from agentapps.errors import DeniedError
from agentapps.mcp.spawn import MAX_MESSAGE

CONNECT_SECONDS = 10.0
SESSION_HEADER = "mcp-session-id"
READ_SECONDS = 300.0  # a server may hold a response stream open while a tool runs


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


@contextlib.asynccontextmanager
async def http_transport(server: str, url: str, headers: dict[str, str],
                         on_lost: Callable[[bool], None] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    home = _origin(httpx2.URL(url))

    async def same_origin(request: httpx2.Request) -> None:
        # The SDK follows only same-origin redirects already; this holds even if that changes.
        if _origin(request.url) != home:
            raise DeniedError(f"MCP server '{server}' redirected to {request.url.host}, another host than "
                              f"the declared {home[1]}; its credentials are not sent there.")

    async def lost(response: httpx2.Response) -> None:
        # A 404 to a POST naming our session: the server rejected the session id before reading the
        # request (it restarted, or it ended the session); the SDK says only "Session not found",
        # with no status. Any other answer to such a POST says the server knows the session, so
        # the connection is told after every one: an earlier 404 (a server's spelling of an
        # unknown method, say) must not make a later call's error look like a lost session.
        request = response.request
        if request.method == "POST" and SESSION_HEADER in request.headers and on_lost is not None:
            on_lost(response.status_code == 404)

    client = httpx2.AsyncClient(headers=headers, event_hooks={"request": [same_origin], "response": [lost]},
                                timeout=httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS))
    transport = streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE)
    async with client, transport as (read, write):
        yield read, write
