"""Starting `agentapps serve`: its own options and its coordinator (one process, or replicas sharing
Redis). Checking the address, bootstrapping, taking the port, running uvicorn and stopping are
every server's (`agentapps.lifecycle.server`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentapps.errors import UsageError
from agentapps.lifecycle import server as front
from agentapps.serve.state import Options


def check(options: Options) -> None:
    front.check_listening("serve", options.host, options.port, has_token=bool(options.tokens),
                          token_env="AGENTAPPS_SERVE_TOKEN")
    for name, value in (("--timeout", options.timeout), ("--concurrency", options.concurrency),
                        ("--heartbeat", options.heartbeat)):
        if not value > 0:
            raise UsageError(f"{name} must be more than 0, got {value}.")
    if options.queue < 0:
        raise UsageError(f"--queue must be 0 or more, got {options.queue}.")


def coordinator(g: Any, redis_url: str | None) -> Any:
    from agentapps.serve.coord import Local

    if not redis_url:
        return Local()
    from agentapps.serve.redis_coord import RedisCoordinator, namespace

    found = RedisCoordinator(redis_url, namespace(g))
    found.check()
    return found


async def _main(server: Any, app: Any, sock: Any) -> None:
    where = "Redis" if type(server.coord).__name__ != "Local" else "one process"

    def stop_streams() -> None:
        for run in list(server.live.values()):
            run.cancel("The server is shutting down.")

    await front.until_stopped(server.g, front.run_web(
        app, sock, lambda host, port: f"agentapps serve: serving http://{host}:{port}/ ({where})", stop_streams))


def serve(options: Options, *, allowed_tools: str | None = None, approve: list[str] | None = None,
          redis_url: str | None = None, cwd: Path | None = None) -> int:
    check(options)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise UsageError("agentapps serve needs Starlette and uvicorn: pip install 'agentapps[serve]'.") from None
    from agentapps.serve.app import build
    from agentapps.serve.state import Server

    g, exposure = front.offered("serve", cwd, allowed_tools, approve or [])
    coord = coordinator(g, redis_url)
    sock = front.listen(options.host, options.port)
    server = Server(g, exposure, coord, options)
    asyncio.run(_main(server, build(server), sock))
    return 0
