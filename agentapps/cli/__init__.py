"""The command line: argv -> bootstrap -> invoke -> render. Every command ends in `dispatch`, and
every exception becomes an exit code in one place (`cli.boundary.fail`)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    sys.exit(dispatch(list(sys.argv[1:] if argv is None else argv)))


def dispatch(args: list[str]) -> int:
    if args in (["--version"], ["-V"]):
        return _version()
    if args in ([], ["--help"], ["-h"]):  # the top-level help, without importing typer
        from agentapps.cli.commands import top_help

        sys.stdout.write(top_help())
        return 0
    if args and args[0] == "run":
        # The hot path skips typer: `run` parses its own argv (the skill's params follow the ref).
        from agentapps.cli.run import run_command

        return run_command(args[1:])
    from agentapps.cli.boundary import fail

    head = args[: args.index("--")] if "--" in args else args
    verbose = "-v" in head or "--verbose" in head  # accepted by every command, anywhere before `--`
    if verbose:
        args = [a for i, a in enumerate(args) if not (i < len(head) and a in ("-v", "--verbose"))]
    try:
        fast = _fast_list(args)
        return fast if fast is not None else _typer(args)
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        return fail(exc, as_json="--json" in head, verbose=verbose)


def _fast_list(args: list[str]) -> int | None:
    """`list` with options the light parser understands skips typer's imports (half the command)."""
    if not args or args[0] != "list":
        return None
    from agentapps.cli.listing import list_skills, parse_fast

    opts = parse_fast(args[1:])
    if opts is None:
        return None
    list_skills(opts["query"], opts["tag"], opts["all"], opts["json"])
    return 0


def _version() -> int:
    from importlib.metadata import PackageNotFoundError, version

    try:
        sys.stdout.write(f"agentapps {version('agentapps')}\n")
    except PackageNotFoundError:  # running from a checkout that was never installed
        sys.stdout.write("agentapps (not installed)\n")
    return 0


def _typer(args: list[str]) -> int:
    import typer
    from typer import _click as click  # typer 0.26+ vendors click

    from agentapps.cli.app import app

    try:
        code = app(args=args, prog_name="agentapps", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # a command group alone (`agentapps runs`)
        sys.stdout.write(exc.format_message().rstrip("\n") + "\n")
        return 0
    except click.exceptions.UsageError as exc:
        path = exc.ctx.command_path if exc.ctx else "agentapps"  # e.g. "agentapps sessions clear"
        sys.stderr.write(f"error: {exc.format_message()} (see '{path} --help')\n")
        return exc.exit_code
    except typer.Abort:
        raise KeyboardInterrupt from None
    return code if isinstance(code, int) else 0
