"""The command line: argv -> bootstrap -> invoke -> render. Every command ends in `dispatch`, and
every exception, the parser's usage errors included, becomes an exit code in one place
(`cli.boundary.fail`); `run` reports its own failures as the run's outcome (`cli.run`)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    try:
        code = dispatch(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # here, where a reader that went away can still be a quiet exit
    except BrokenPipeError:
        from agentapps.cli.boundary import pipe_closed

        code = pipe_closed()
    sys.exit(code)


def dispatch(args: list[str]) -> int:
    if args in (["--version"], ["-V"]):
        return _version()
    if args in ([], ["--help"], ["-h"]):  # the top-level help, without importing typer
        from agentapps.cli.commands import top_help

        sys.stdout.write(top_help())
        return 0
    if args and args[0] in ("completion", "__complete"):  # (no typer: a completion must answer fast)
        from agentapps.cli.completion import command

        return command(args)
    if args[:2] == ["runs", "resume"] and not {"-h", "--help"} & set(args):
        from agentapps.cli.run import run_command  # `run --resume`, spelled as a `runs` command

        return run_command(["--resume", *args[2:]])
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
        _known_command(args)
        if args and args[0] == "list":  # like `run`, `list` parses its own argv (no typer: half its start-up)
            from agentapps.cli.listing import list_command

            return list_command(args[1:])
        return _typer(args)
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        return fail(exc, as_json="--json" in head, verbose=verbose)


def _known_command(args: list[str]) -> None:
    """An unknown command is refused here, with the closest of every command (`run` included,
    which the typer app does not know) as the suggestion."""
    from agentapps.cli.commands import COMMANDS

    if not args or args[0].startswith("-") or args[0] in COMMANDS:
        return
    import difflib

    from agentapps.errors import UsageError

    close = difflib.get_close_matches(args[0], list(COMMANDS), n=2, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise UsageError(f"No such command '{args[0][:80]}'.{hint} (see 'agentapps --help')")


def _version() -> int:
    from agentapps.version import __version__  # (importlib.metadata would cost more than --help)

    sys.stdout.write(f"agentapps {__version__}\n")
    return 0


def _typer(args: list[str]) -> int:
    import typer

    from agentapps.cli.app import app

    try:
        code = app(args=args, prog_name="agentapps", standalone_mode=False)
    except typer.Abort:
        raise KeyboardInterrupt from None
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":  # a command group alone (`agentapps runs`)
            sys.stdout.write(exc.format_message().rstrip("\n") + "\n")  # type: ignore[attr-defined]
            return 0
        from agentapps.errors import UsageError

        ctx = getattr(exc, "ctx", None)
        path = ctx.command_path if ctx is not None else "agentapps"  # e.g. "agentapps sessions clear"
        raise UsageError(f"{exc.format_message()} (see '{path} --help')") from None  # type: ignore[attr-defined]
    return code if isinstance(code, int) else 0


def _is_usage_error(exc: Exception) -> bool:
    """Whether `exc` is the parser's own usage error. Told by what it offers (click's exception
    protocol: a message to format and an exit code), not by importing the class from typer's private
    `_click` package."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int) \
        and hasattr(exc, "ctx")
