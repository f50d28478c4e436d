"""Threads: the sessions of skills that keep one by an arg (`metadata.session: args.NAME`). The
server fills that arg with the thread id, so each client sees, continues and deletes only its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agentapps.errors import UsageError
from agentapps.serve.http import Refused, endpoint

if TYPE_CHECKING:
    from agentapps.serve.state import Server


async def _mine(request: Request) -> tuple[Server, dict[str, Any]]:
    server: Server = request.app.state.server
    thread_id = request.path_params["thread"]
    found = await server.coord.thread(thread_id)
    if found is None or found.get("owner") != request.state.identity:
        raise Refused(404, UsageError(f"No thread '{thread_id[:128]}' (GET /threads lists yours)."))
    return server, found


def _store(server: Server, thread: dict[str, Any]) -> Any:
    from agentapps.stores.sessions import open_store

    store = thread.get("store")
    return open_store(server.g, str(store) if store else None)  # None: the project's default store


@endpoint
async def list_threads(request: Request) -> Response:
    server: Server = request.app.state.server
    found = await server.coord.threads(request.state.identity)
    return JSONResponse({"threads": [{k: v for k, v in t.items() if k != "owner"} for t in found]})


@endpoint
async def get_thread(request: Request) -> Response:
    server, found = await _mine(request)
    entries = _store(server, found).load(found["id"])
    body = {**{k: v for k, v in found.items() if k != "owner"}, "entries": entries}
    return JSONResponse(server.g.internals.redactor.redact_data(body))


@endpoint
async def delete_thread(request: Request) -> Response:
    server, found = await _mine(request)
    _store(server, found).clear(found["id"])
    await server.coord.drop_thread(found["id"])
    return JSONResponse({"ok": True, "id": found["id"]})
