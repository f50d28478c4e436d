"""The command line: argv -> bootstrap -> invoke -> render; the only place errors become exit codes."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "run":
        # The hot path skips typer: `run` parses its own argv (the skill's params follow the ref).
        from agentapps.cli.run import run_command

        sys.exit(run_command(args[1:]))
    from agentapps.cli.app import app

    app(args=args, prog_name="agentapps")
