"""Starting `agentapps serve`: check the options, bootstrap the project, take the port (a port in
use is one line and exit 2), connect the coordinator, and run uvicorn until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from agentapps.errors import UsageError
from agentapps.serve.state import Options

GRACE_SECONDS = 2  # open streams are cancelled at shutdown; what is left after this is dropped


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit this: the status line and the body go out as two writes, and with
    # Nagle the second waits for a delayed ACK (measured: 44 ms per keep-alive request without it)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(512)
    except OSError as exc:
        sock.close()
        why = "the port is in use (another server?)" if exc.errno == 98 else (exc.strerror or str(exc))
        raise UsageError(f"Cannot listen on {host}:{port}: {why}; pick another --port.") from None
    sock.setblocking(False)
    return sock


def check(options: Options) -> None:
    if not 0 <= options.port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {options.port}.")
    if not options.loopback and not options.tokens:
        raise UsageError(f"Serving on {options.host} (not loopback) needs --token (or AGENTAPPS_SERVE_TOKEN): "
                         "clients must then send 'Authorization: Bearer TOKEN'.")
    for name, value in (("--timeout", options.timeout), ("--concurrency", options.concurrency),
                        ("--heartbeat", options.heartbeat)):
        if not value > 0:
            raise UsageError(f"{name} must be more than 0, got {value}.")


def coordinator(g: Any, redis_url: str | None) -> Any:
    from agentapps.serve.coord import Local

    if not redis_url:
        return Local()
    from agentapps.serve.redis_coord import RedisCoordinator, namespace

    found = RedisCoordinator(redis_url, namespace(g))
    found.check()
    return found


async def _main(server: Any, app: Any, sock: socket.socket) -> None:
    import uvicorn

    from agentapps.core.cleanup import run_cleanups

    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                                        timeout_graceful_shutdown=GRACE_SECONDS))

    async def announce() -> None:
        while not web.started:
            await asyncio.sleep(0.02)
        host, port = sock.getsockname()[:2]
        sys.stderr.write(f"agentapps serve: serving http://{host}:{port}/ "
                         f"({'Redis' if type(server.coord).__name__ != 'Local' else 'one process'})\n")
        sys.stderr.flush()

    async def stop_streams() -> None:  # open streams would hold the graceful shutdown for its whole length
        while not web.should_exit:
            await asyncio.sleep(0.1)
        for run in list(server.live.values()):
            run.cancel("The server is shutting down.")

    helpers = [asyncio.ensure_future(announce()), asyncio.ensure_future(stop_streams())]
    try:
        await web.serve(sockets=[sock])
    finally:
        for task in helpers:
            task.cancel()
        g = server.g
        await run_cleanups(g.internals)
        for pgid in list(g.internals.children):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)


def serve(options: Options, *, allowed_tools: str | None = None, approve: list[str] | None = None,
          redis_url: str | None = None, cwd: Path | None = None) -> int:
    check(options)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise UsageError("agentapps serve needs Starlette and uvicorn: pip install 'agentapps[serve]'.") from None
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: no such folder.")
    from agentapps.boot import bootstrap
    from agentapps.hosting import prepare_server
    from agentapps.mcp.exposed import Exposure
    from agentapps.serve.app import build
    from agentapps.serve.state import Server
    from agentapps.tools.policy import Policy

    g = bootstrap(cwd).globals
    exposure = Exposure(g.lookup, Policy.parse(allowed_tools, "serve") if allowed_tools else None)
    exposure.refresh()
    coord = coordinator(g, redis_url)
    sock = listen(options.host, options.port)
    warning = exposure.warning("serve")
    if warning:  # it still starts: the pattern may select a skill added later
        sys.stderr.write(warning + "\n")
        sys.stderr.flush()
    prepare_server(g, list(approve or []))
    server = Server(g, exposure, coord, options)
    asyncio.run(_main(server, build(server), sock))
    return 0
