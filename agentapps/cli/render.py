"""Everything the CLI writes: the result on stdout, one-line diagnostics on stderr.

During a run stdout and stderr redact declared secrets themselves (cli/streams.py); data is also
redacted before it is turned into JSON, so a redacted number or key still gives valid JSON.

What a terminal would act on is escaped (`core.terminal.escape`) in every diagnostic, on a terminal
or not, and in a result or `--json` shown on a terminal; a result written to a pipe or a file is
byte-exact. Only the CLI's own colours are written unescaped, through `styled`.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from agentapps.core.terminal import escape, is_terminal
from agentapps.errors import AgentAppsError
from agentapps.secrets import redact

if TYPE_CHECKING:
    from agentapps.runstate import Internals


_RESULTS: list[TextIO] = []  # the result stream while a run lasts (its sys.stdout is then stderr)


def out() -> TextIO:
    """Where the result goes: stdout. During a run `sys.stdout` is pointed at stderr, so nothing a
    skill prints can mix with the result or break `--json`; the run's real stdout is kept here."""
    return _RESULTS[-1] if _RESULTS else sys.stdout


def results_to(stream: TextIO | None) -> list[TextIO]:
    """Send results to `stream` until it is called with None; returns the streams in use."""
    if stream is None:
        _RESULTS.pop()
    else:
        _RESULTS.append(stream)
    return list(_RESULTS)


def color_enabled(stream: TextIO) -> bool:
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def styled(stream: Any) -> Any:
    """Where the CLI writes its own escape sequences (colours, the spinner) on `stream`: past the
    escaping of a run's stderr (cli/streams.py), through its redaction."""
    return stream.styled() if hasattr(stream, "styled") else stream


def _label(label: str, code: str, stream: TextIO) -> None:
    if color_enabled(stream):
        styled(stream).write(f"\x1b[{code}m{label}\x1b[0m")
    else:
        stream.write(label)


def on(stream: Any, text: str) -> str:
    """`text` as it may be written to stdout `stream`: escaped on a terminal, else byte-exact."""
    return escape(text) if is_terminal(stream) else text


def to_text(result: Any) -> str | None:
    """Strings print as they are; anything else prints as JSON; None prints nothing."""
    if result is None:
        return None
    if isinstance(result, str):
        return result
    return json.dumps(result, indent=2, ensure_ascii=False, default=str)


def _redacted(data: Any, internals: Internals | None) -> Any:
    return internals.redactor.redact_data(data) if internals is not None else data


def emit_result(result: Any, internals: Internals | None = None) -> None:
    text = to_text(_redacted(result, internals))
    if text is None:
        return
    text = redact(text, internals)
    stream = out()
    text = on(stream, text)  # a pipe or a file gets the result byte-exact
    stream.write(text if text.endswith("\n") else text + "\n")
    stream.flush()


def emit_json(payload: dict[str, Any], internals: Internals | None = None) -> None:
    text = redact(json.dumps(_redacted(payload, internals), ensure_ascii=False, default=str), internals)
    stream = out()
    stream.write(on(stream, text) + "\n")  # escaped, it is still valid JSON
    stream.flush()


def warn(message: str) -> None:
    _label("warning:", "33", sys.stderr)
    sys.stderr.write(" " + escape(message) + "\n")


def info(message: str) -> None:
    sys.stderr.write(escape(message) + "\n")


BUG_HINT = " (this is a bug; run with -v for the traceback)"


def error_line(exc: BaseException, internals: Internals | None = None) -> str:
    """The one line the terminal shows for `exc`: its error record's message (redacted, then made
    one line), with a hint when it is a bug."""
    from agentapps.lifecycle import failure

    line = failure.one_line(failure.message(exc), internals.redactor if internals is not None else None)
    return line + BUG_HINT if failure.internal(exc) else line


def emit_error(exc: BaseException, record: dict[str, Any] | None = None, *, verbose: bool,
               internals: Internals | None = None) -> None:
    """One line on stderr: `record`'s message (the run's error record) or `exc`'s; the traceback
    first with `verbose` (always redacted)."""
    from agentapps.lifecycle import failure

    if verbose and (not isinstance(exc, AgentAppsError) or exc.__cause__ is not None):
        import traceback

        sys.stderr.write(escape(redact("".join(traceback.format_exception(exc)), internals)))
    if record is not None:
        line = str(record["message"]) + (BUG_HINT if failure.internal(exc) else "")
    else:
        line = error_line(exc, internals)
    _label("error:", "31;1", sys.stderr)
    sys.stderr.write(" " + escape(line) + "\n")
    sys.stderr.flush()
