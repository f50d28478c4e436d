"""The `repl` command's registration (a light module: the REPL itself, which needs an event loop,
is imported only when the command runs)."""

from __future__ import annotations

from pathlib import Path

import typer

DEFAULT_SKILL = "assistant"


def register(app: typer.Typer) -> None:
    """Add the `repl` command to `app`."""
    from agentapps.cli.commands import COMMANDS

    @app.command("repl", help=COMMANDS["repl"])
    def repl_command(
        skill: str = typer.Argument(None, help=f"A markdown skill (default: the bundled '{DEFAULT_SKILL}')."),
        task: str = typer.Option(None, "--task", help="The first message (else the first line typed)."),
        model: str = typer.Option(None, "--model", help="Model id for the agent."),
        replay: str = typer.Option(None, "--replay", help="Play the model turns in FILE (offline)."),
        quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress: only the prompt."),
    ) -> int:
        from agentapps.cli.repl import repl

        return repl(skill, task, model=model, replay=str(Path(replay).absolute()) if replay else None,
                    quiet=quiet)

