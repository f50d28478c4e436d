"""The Streamable HTTP transport: declared headers go to the declared origin and nowhere else, and
one message may be as long as over stdio (16 MiB; the SDK reads 1 MiB per event by default)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from agentapps.errors import DeniedError
from agentapps.mcp.spawn import MAX_MESSAGE

CONNECT_SECONDS = 10.0
READ_SECONDS = 300.0  # a server may hold a response stream open while a tool runs


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


@contextlib.asynccontextmanager
async def http_transport(server: str, url: str, headers: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    home = _origin(httpx2.URL(url))

    async def same_origin(request: httpx2.Request) -> None:
        # The SDK follows only same-origin redirects already; this holds even if that changes.
        if _origin(request.url) != home:
            raise DeniedError(f"MCP server '{server}' redirected to {request.url.host}, another host than "
                              f"the declared {home[1]}; its credentials are not sent there.")

    client = httpx2.AsyncClient(headers=headers, event_hooks={"request": [same_origin]},
                                timeout=httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS))
    transport = streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE)
    async with client, transport as (read, write):
        yield read, write
