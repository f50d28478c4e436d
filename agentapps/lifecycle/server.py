"""A long-lived front end's own lifecycle, shared by `agentapps serve` and `agentapps mcp-server`:
check the listening options, bootstrap the project and the skills it offers, take the port (a
port in use is one line and exit 2), run uvicorn until SIGINT or SIGTERM with one "serving URL"
line on stderr, and stop with the process's cleanups and the kill of what it started.

Each door keeps only what is its own: `serve` its routes, coordinator and schedules, `mcp-server`
its MCP session manager and the stdio transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import UsageError

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.mcp.exposed import Exposure

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_SECONDS = 2  # open streams are cancelled at shutdown; what is left after this is dropped


def check_listening(door: str, host: str, port: int, *, has_token: bool, token_env: str) -> None:
    """The options every HTTP door refuses alike: a port out of range, a non-loopback address
    without a bearer token."""
    from agentapps.net.gate import bound_to_loopback

    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {port}.")
    if not bound_to_loopback(host) and not has_token:
        raise UsageError(f"Serving on {host} (not loopback) needs --token (or {token_env}): "
                         f"clients must then send 'Authorization: Bearer TOKEN'.")


def offered(door: str, cwd: Path | None, allowed_tools: str | None, approve: Sequence[str], *,
            detach_stdin: bool = True) -> tuple[Globals, Exposure]:
    """Bootstrap the project in `cwd` for a server and choose the skills it offers
    (`--allowed-tools`); a pattern that selects none yet is one warning, not a refusal (a skill
    may be added while it runs)."""
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: no such folder.")
    from agentapps.boot import bootstrap
    from agentapps.lifecycle.served import prepare_server
    from agentapps.mcp.exposed import Exposure
    from agentapps.tools.policy import Policy

    g = bootstrap(cwd).globals
    prepare_server(g, list(approve), detach_stdin=detach_stdin)
    exposure = Exposure(g.lookup, Policy.parse(allowed_tools, door) if allowed_tools else None)
    exposure.refresh()
    warning = exposure.warning(door)
    if warning:
        say(warning)
    return g, exposure


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, taken before anything is served: a port in use is a UsageError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit this: the status line and the body go out as two writes, and with
    # Nagle the second waits for the client's delayed ACK (at least 40 ms on Linux: measured 44 ms per
    # keep-alive request without this)
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


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


async def run_web(app: Any, sock: socket.socket, announce: Callable[[str, int], str],
                  on_stopping: Callable[[], None] | None = None) -> list[int]:
    """Serve `app` on `sock` with uvicorn until SIGINT/SIGTERM; the signals that stopped it, to be
    raised again once the process's cleanups are done (`until_stopped`). Once it listens,
    `announce(host, port)` gives the one line said on stderr; `on_stopping` runs as soon as the
    shutdown begins (open streams would otherwise hold the graceful shutdown for its whole length)."""
    web = _web_server(app)

    async def started() -> None:
        while not web.started:
            await asyncio.sleep(0.02)
        host, port = sock.getsockname()[:2]
        say(announce(f"[{host}]" if ":" in host else host, port))  # an IPv6 address in a URL

    async def stopping() -> None:
        while not web.should_exit:
            await asyncio.sleep(0.1)
        if on_stopping is not None:
            on_stopping()

    helpers = [asyncio.ensure_future(started()), asyncio.ensure_future(stopping())]
    try:
        await web.serve(sockets=[sock])
    finally:
        for task in helpers:
            task.cancel()
    return list(web.received)


def _web_server(app: Any) -> Any:
    """A uvicorn server that keeps the stop signals it catches instead of raising them again as its
    `serve()` returns: raised there, a SIGTERM ended the process with the default action before the
    cleanups ran, so the run-log records of runs that ended during the shutdown were lost and the
    process groups the server started were left to die on their own."""
    import threading

    import uvicorn

    class Web(uvicorn.Server):
        received: list[int]

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            self.received = []
            if threading.current_thread() is not threading.main_thread():
                yield  # (signals reach the main thread only: an embedding program handles them)
                return

            def caught(signum: int, frame: Any) -> None:
                self.received.append(signum)
                self.handle_exit(signum, frame)

            before = {signum: signal.signal(signum, caught) for signum in STOP_SIGNALS}
            try:
                yield
            finally:
                for signum, handler in before.items():
                    signal.signal(signum, handler)

    return Web(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                              timeout_graceful_shutdown=GRACE_SECONDS))


async def stop(g: Globals) -> None:
    """The end of a server process: its cleanups (the run log's last records, MCP sessions...),
    then every process group it started is killed."""
    from agentapps.core.cleanup import run_cleanups
    from agentapps.telemetry.ending import aclose

    await run_cleanups(g.internals)
    await aclose(g.internals)  # the spans of its last runs, in bounded time (traces on only)
    for pgid in list(g.internals.children):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


async def until_stopped(g: Globals, serving: Awaitable[list[int] | None]) -> None:
    """Await `serving` and then `stop(g)`, whatever ends it (a signal's cancellation included); then
    the signals that stopped it are raised again, so the process ends as that signal ends it
    (SIGTERM with its default action, SIGINT as KeyboardInterrupt), its cleanups done first."""
    received: list[int] | None = None
    try:
        received = await serving
    except asyncio.CancelledError:
        pass
    finally:
        await stop(g)
    for signum in reversed(received or []):
        signal.raise_signal(signum)
