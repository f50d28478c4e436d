"""The Starlette application of `agentapps serve`: the route table, JSON for every error, and the
lifespan that connects the coordinator and runs the schedules."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentapps.serve import hooks, page, routes, threads
from agentapps.serve.guard import Guard
from agentapps.serve.openapi import document
from agentapps.serve.schedule import run_schedules

if TYPE_CHECKING:
    from agentapps.serve.state import Server

log = logging.getLogger("agentapps.serve")


def _error(status: int, type_: str, message: str, code: int) -> JSONResponse:
    return JSONResponse({"ok": False, "error": {"type": type_, "message": message, "exit_code": code,
                                                "skill": None, "file": None, "line": None}}, status_code=status)


async def http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return _error(404, "UsageError", f"No such endpoint: {request.method} {request.url.path[:200]}.", 2)
    if status == 405:
        return _error(405, "UsageError", f"{request.method} is not allowed on {request.url.path[:200]}.", 2)
    return _error(status, "UsageError", str(getattr(exc, "detail", "Bad request."))[:200], 2)


async def internal_error(request: Request, exc: Exception) -> Response:
    log.error("internal error serving %s", request.url.path, exc_info=exc)  # the traceback stays here
    return _error(500, "InternalError", f"internal error: {type(exc).__name__}", 1)


async def openapi(request: Request) -> Response:
    return JSONResponse(document())


def build(server: Server) -> Any:
    """The ASGI app: Guard in front of the Starlette routes."""
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await server.coord.start(server.deliver, server.live.__contains__)
        scheduler = asyncio.ensure_future(run_schedules(server))
        try:
            yield
        finally:
            scheduler.cancel()
            for run in list(server.live.values()):
                run.cancel("The server is shutting down.")
            if server.background:
                await asyncio.wait(list(server.background), timeout=2)
            await server.coord.close()

    app = Starlette(routes=[  # the busiest first: a request is matched against each route in turn
        Route("/invocations", routes.invocations, methods=["POST"]),
        Route("/chat", routes.chat, methods=["POST"]),
        Route("/", page.index, methods=["GET"]),
        Route("/healthz", routes.healthz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/skills", routes.skills, methods=["GET"]),
        Route("/approve", routes.approve, methods=["POST"]),
        Route("/cancel", routes.cancel, methods=["POST"]),
        Route("/steer", routes.steer, methods=["POST"]),
        Route("/follow-up", routes.follow_up, methods=["POST"]),
        Route("/threads", threads.list_threads, methods=["GET"]),
        Route("/threads/{thread}", threads.get_thread, methods=["GET"]),
        Route("/threads/{thread}", threads.delete_thread, methods=["DELETE"]),
        Route("/hooks/{skill}", hooks.hook, methods=["POST"]),
    ], exception_handlers={HTTPException: http_error, Exception: internal_error}, lifespan=lifespan)
    app.state.server = server
    return Guard(app, server.options)
