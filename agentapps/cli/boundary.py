"""The one place an exception becomes an exit code: a one-line message on stderr (a traceback
with -v, or for an internal error), and the failure object on stdout when JSON was asked for."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agentapps.cli import render
from agentapps.errors import AgentAppsError

if TYPE_CHECKING:
    from agentapps.context.context import Internals


def exit_code(exc: BaseException) -> int:
    if isinstance(exc, AgentAppsError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return 130
    return 1


def error_object(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, AgentAppsError):
        return exc.to_dict()
    return {"type": type(exc).__name__, "message": render.error_line(exc), "exit_code": exit_code(exc)}


def fail(exc: BaseException, *, as_json: bool = False, verbose: bool = False,
         internals: Internals | None = None, payload: dict[str, Any] | None = None,
         started: float | None = None) -> int:
    """Report `exc` and return its exit code. `payload` adds fields to the JSON failure object
    (`run --json` prints {ok, skill, result, error, duration_ms, ...})."""
    render.emit_error(exc, verbose=verbose, internals=internals)
    if as_json:
        body: dict[str, Any] = {"ok": False, **(payload or {}), "error": error_object(exc)}
        if started is not None:
            body["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
        render.emit_json(body, internals)
    return exit_code(exc)
