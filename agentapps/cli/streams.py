"""The CLI's stdout and stderr while a run lasts: every write redacted, logging routed through them.

`redacted_output()` puts a `RedactingStream` in place of `sys.stdout` and `sys.stderr`, so
everything Python writes there — results, `--json`, progress, warnings, log records, `-v`
tracebacks, a code skill's `print` — passes the process's `Redactor`. Only the result reaches
stdout (through `render.out()`): `sys.stdout` itself writes to stderr while the run lasts, so what a
skill prints is a diagnostic and cannot corrupt the result or the `--json` object. A value split across two
writes (streamed model text) is caught: the end of a write that could begin a secret is held until
the next write or `drain()`. Text that cannot be encoded (a lone surrogate) is written with U+FFFD.

stderr also escapes what a terminal would act on (`core.terminal.escape`), whether it is a terminal
or a CI log: a skill's print, a log record or a traceback cannot set the clipboard or switch the
charset. The CLI's own colours and spinner go through `styled()`, with their text escaped by the
writer. The result stream is not escaped here: `render.emit_result` escapes a result shown on a
terminal, and leaves one written to a pipe or file byte-exact.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from agentapps.core.terminal import escape
from agentapps.lifecycle.streaming import StreamRedactor
from agentapps.secrets import Redactor


class RedactingStream:
    """A text stream that writes through a redactor to the stream it wraps."""

    def __init__(self, stream: TextIO, redactor: Redactor, *, escaped: bool = False) -> None:
        self.stream = stream
        self.pieces = StreamRedactor(redactor)  # text and bytes share what is held back
        self.escaped = escaped  # terminal controls in what is written are escaped
        self.before_write: Callable[[], None] | None = None  # the progress display stops its spinner

    def write(self, text: str) -> int:
        if self.before_write is not None and text:
            self.before_write()
        out = self.pieces.feed(text)
        self._write(escape(out) if self.escaped else out)
        return len(text)

    def write_styled(self, text: str) -> int:
        """Redacted but not escaped: the CLI's own colours and spinner, whose text its writer
        escaped already."""
        if self.escaped and self.pieces.held:  # held from an escaped write: it is shown escaped
            self._write(escape(self.pieces.end()))
        self._write(self.pieces.feed(text))
        return len(text)

    def styled(self) -> _Styled:
        """A stream for the CLI's own styling (rich writes its spinner to it)."""
        return _Styled(self)

    def _write(self, text: str) -> None:
        if not text:
            return
        try:
            self.stream.write(text)
        except UnicodeEncodeError:  # lone surrogates (e.g. half an emoji cut by agent code)
            self.stream.write(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.stream.flush()

    def drain(self) -> None:
        """Write what was held back (the run is over, nothing more can complete it)."""
        self._write(self.pieces.end())
        self.flush()

    @property
    def buffer(self) -> _RedactingBuffer:
        """The binary layer, redacted like the text one: a skill writing bytes to
        `sys.stdout.buffer` must not get past the redactor."""
        if not hasattr(self.stream, "buffer"):
            raise AttributeError("buffer")
        return _RedactingBuffer(self)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self.stream, name)


class _Styled:
    """`RedactingStream.styled()`: writes go to `write_styled`."""

    def __init__(self, text: RedactingStream) -> None:
        self.text = text

    def write(self, text: str) -> int:
        return self.text.write_styled(text)

    def flush(self) -> None:
        self.text.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self.text.stream, name)


class _RedactingBuffer:
    """`RedactingStream.buffer`: bytes are read as UTF-8 (bytes that are not stay exactly as they
    were), redacted with the text written so far, and written to the wrapped stream's buffer after
    its text layer is flushed, so text and bytes keep their order."""

    def __init__(self, text: RedactingStream) -> None:
        self.text = text

    def write(self, data: Any) -> int:
        raw = bytes(data)
        t = self.text
        if t.before_write is not None and raw:
            t.before_write()
        out = t.pieces.feed(raw.decode("utf-8", "surrogateescape"))
        if out and t.escaped:
            out = escape(out)
        if out:
            try:
                encoded = out.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate from the text layer
                encoded = out.encode("utf-8", "replace")
            t.stream.flush()
            t.stream.buffer.write(encoded)
        return len(raw)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.text.stream.flush()
        self.text.stream.buffer.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, raw, ...
        return getattr(self.text.stream.buffer, name)


def drain_all() -> None:
    """Flush stdout, stderr and the result stream, held-back text included (before a hard exit)."""
    from agentapps.cli.render import out

    for stream in dict.fromkeys((sys.stdout, sys.stderr, out())):
        try:
            if isinstance(stream, RedactingStream):
                stream.drain()
            elif stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


@contextmanager
def redacted_output(redactor: Redactor, *, verbose: bool) -> Iterator[None]:
    """Route stdout, stderr and the `agentapps` loggers through `redactor` for the duration."""
    from agentapps.cli import render
    from agentapps.core import logs

    saved = sys.stdout, sys.stderr
    results = RedactingStream(sys.stdout, redactor)
    sys.stderr = RedactingStream(sys.stderr, redactor, escaped=True)
    sys.stdout = sys.stderr  # a skill's print is a diagnostic
    render.results_to(results)  # type: ignore[arg-type]
    logs.route(verbose=verbose)  # logging itself is loaded only if the run logs
    try:
        yield
    finally:
        logs.unroute()
        drain_all()
        render.results_to(None)
        sys.stdout, sys.stderr = saved
