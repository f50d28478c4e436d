"""`agentapps serve`: the typer command (the server itself is agentapps/serve/)."""

from __future__ import annotations

from pathlib import Path

import typer

from agentapps.cli.commands import COMMANDS


def register(app: typer.Typer) -> None:
    @app.command("serve", help=COMMANDS["serve"])
    def serve(
        host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (not loopback needs --token)."),
        port: int = typer.Option(8000, "--port", help="Port (0 picks a free one)."),
        token: list[str] = typer.Option(None, "--token", help="A bearer token clients send (repeatable: each "
                                        "is one client identity). Also AGENTAPPS_SERVE_TOKEN."),
        allow_origin: list[str] = typer.Option(None, "--allow-origin", help="A browser Origin allowed to call "
                                               "the API (gets CORS headers); repeatable."),
        allowed_tools: str = typer.Option(None, "--allowed-tools", help="Serve only skills these globs select."),
        approve: list[str] = typer.Option(None, "--approve", help="Approve calls trust rules would ask about."),
        timeout: float = typer.Option(300.0, "--timeout", help="Seconds one run may take."),
        concurrency: int = typer.Option(8, "--concurrency", help="Runs one client may have going at once."),
        queue: int = typer.Option(64, "--queue", help="Requests of one client that may wait for a free slot "
                                  "before more are refused (429)."),
        heartbeat: float = typer.Option(15.0, "--heartbeat", help="Seconds between keep-alive comments on a stream."),
        redis: str = typer.Option(None, "--redis", envvar="AGENTAPPS_REDIS_URL",
                                  help="Share streams, approvals, threads and schedules with other replicas."),
        cwd: Path = typer.Option(None, "--cwd", help="Serve the project found from this folder (default: here)."),
    ) -> int:
        import os

        from agentapps.serve.command import serve as start
        from agentapps.serve.state import Options

        tokens = list(token or []) + os.environ.get("AGENTAPPS_SERVE_TOKEN", "").split()
        options = Options(host=host, port=port, tokens=tuple(tokens), origins=tuple(allow_origin or []),
                          timeout=timeout, concurrency=concurrency, queue=queue, heartbeat=heartbeat)
        return start(options, allowed_tools=allowed_tools, approve=list(approve or []), redis_url=redis,
                     cwd=cwd.resolve() if cwd else None)
