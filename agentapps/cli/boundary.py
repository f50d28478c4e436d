"""Where the command line turns an exception into an exit code: the run's error record
(`lifecycle.failure`) as one line on stderr (a traceback with -v, or for an internal error), and as
the failure object on stdout when JSON was asked for."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agentapps.cli import render
from agentapps.lifecycle import failure

if TYPE_CHECKING:
    from agentapps.runstate import Internals

exit_code = failure.exit_code
PIPE_CLOSED = 141  # what a shell reports for a command that SIGPIPE ended (`yes | head`)


def pipe_closed() -> int:
    """Whoever read our stdout went away (`agentapps list | head`): a quiet exit, as every Unix
    tool makes. What is still buffered goes nowhere, so the interpreter's own last flush cannot
    fail again."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (a test's capture)
        pass
    return PIPE_CLOSED


def fail(exc: BaseException, **how: Any) -> int:
    """Report `exc` (see `report`) and return its exit code."""
    if isinstance(exc, BrokenPipeError):
        return pipe_closed()
    return int(report(exc, **how)["exit_code"])


def report(exc: BaseException, *, as_json: bool = False, verbose: bool = False,
           internals: Internals | None = None, payload: dict[str, Any] | None = None,
           started: float | None = None, skill: str | None = None) -> dict[str, Any]:
    """Report `exc` and return its error record. `payload` adds fields to the JSON failure object
    (`run --json` prints {ok, skill, result, error, duration_ms, ...}); `skill` is the skill whose
    run it ended, when the error names none."""
    redactor = internals.redactor if internals is not None else None
    record = failure.record(exc, redactor, skill=skill)
    render.emit_error(exc, record, verbose=verbose, internals=internals)
    if as_json:
        body: dict[str, Any] = {"ok": False, **(payload or {}), "error": record}
        if started is not None:
            body["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
        render.emit_json(body, internals)
    return record
