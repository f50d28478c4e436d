"""The command line: argv -> bootstrap -> invoke -> render; the only place errors become exit codes."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from importlib.metadata import PackageNotFoundError, version

        try:
            sys.stdout.write(f"agentapps {version('agentapps')}\n")
        except PackageNotFoundError:  # running from a checkout that was never installed
            sys.stdout.write("agentapps (not installed)\n")
        sys.exit(0)
    if args and args[0] == "run":
        # The hot path skips typer: `run` parses its own argv (the skill's params follow the ref).
        from agentapps.cli.run import run_command

        sys.exit(run_command(args[1:]))
    import typer
    from typer import _click as click  # typer 0.28 vendors click

    from agentapps.cli.app import app

    try:
        code = app(args=args, prog_name="agentapps", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError:  # `agentapps` alone: typer has printed the help already
        code = 0
    except click.exceptions.UsageError as exc:
        path = exc.ctx.command_path if exc.ctx else "agentapps"  # e.g. "agentapps sessions clear"
        where = f" (see '{path} --help')"
        sys.stderr.write(f"error: {exc.format_message()}{where}\n")
        code = exc.exit_code
    except typer.Abort:
        sys.stderr.write("error: Interrupted.\n")
        code = 130
    sys.exit(code if isinstance(code, int) else 0)
