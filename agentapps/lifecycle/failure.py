"""The error record of a run: built once from the exception, redacted once, then shown by any door.

`record(exc, redactor)` is what `run --json` prints under `error`, what `serve` answers and streams,
what `mcp-server` puts in an error tool result and what the run log keeps (as `line`). Our own
errors keep their class name and exit code; anything else is an internal error (exit 1) whose
message says so. The message is redacted while it still has its line breaks, then made one line:
collapsing first would turn a multi-line secret (a PEM key) into text that no longer matches it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError

if TYPE_CHECKING:
    from agentapps.secrets import Redactor

INTERRUPTED = 130
INTERNAL = "InternalError"


def exit_code(exc: BaseException) -> int:
    """The exit code a run that ended with `exc` exits with (and every door reports)."""
    if isinstance(exc, AgentAppsError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt) or type(exc).__name__ == "CancelledError":
        return INTERRUPTED
    return 1


def internal(exc: BaseException) -> bool:
    """Whether `exc` is a bug (ours or a skill's) rather than an error raised on purpose."""
    return not isinstance(exc, (AgentAppsError, KeyboardInterrupt))


def message(exc: BaseException) -> str:
    """The message as raised, line breaks kept (file:line first where there is one)."""
    if isinstance(exc, AgentAppsError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "Interrupted."
    return f"internal error: {type(exc).__name__}: {exc}"


def one_line(text: str, redactor: Redactor | None = None) -> str:
    """`text` redacted, then with every run of whitespace (line breaks included) made one space."""
    if redactor is not None:
        text = redactor.redact(text)
    return " ".join(text.split())


def record(exc: BaseException, redactor: Redactor | None = None, *, skill: str | None = None) -> dict[str, Any]:
    """{type, message, exit_code, skill, file, line}: the one error object every door shows.
    `skill` names the skill whose run ended when the error itself names none (a timeout, a signal)."""
    if isinstance(exc, AgentAppsError):
        kind = "Interrupted" if exc.exit_code > 128 else type(exc).__name__
        found: dict[str, Any] = {"type": kind, "message": one_line(message(exc), redactor),
                                 "exit_code": exc.exit_code, "skill": exc.skill or skill,
                                 "file": exc.file, "line": exc.line}
    else:
        kind = "Interrupted" if exit_code(exc) == INTERRUPTED else INTERNAL
        found = {"type": kind, "message": one_line(message(exc), redactor), "exit_code": exit_code(exc),
                 "skill": skill, "file": None, "line": None}
    if redactor is not None:
        found = redactor.redact_data(found)
    return found
