"""The `agentapps` loggers during a CLI run: routed through the run's redacted stderr, set up only
once something uses them.

Importing `logging` costs a plain code-skill run 4.3-4.7 ms it never needs (measured on this
project's 2-core machine, idle, `python -X importtime`, 2026-11-27; a start-up trick must buy more
than 4 ms, and tests/test_architecture.py fails if a plain run imports `logging`), so `route()` (called by
the CLI when a run starts, with stderr already redacted) installs the handler at once only when
`logging` is already loaded or `-v` asks for debug records; otherwise it is installed the moment
anything imports `logging` (a finder on `sys.meta_path` wraps that one import), so a skill's own
`logging.getLogger("agentapps.x")` is routed like agentapps' own loggers. The handler writes to the
stream that was `sys.stderr` when `route()` was called (the run's redacted stderr), never to
whatever `sys.stderr` happens to be when `logging` is first imported: a skill or library that
imports it inside `contextlib.redirect_stderr(...)` must not take the run's records with it.
"""

from __future__ import annotations

import sys
from typing import Any

_pending: bool | None = None  # verbose flag of the run waiting for its handler, if any
_stream: Any = None  # the stream the pending run's records go to (sys.stderr when route() was called)
_installed: tuple[Any, Any, int, bool] | None = None  # (logger, handler, previous level, propagate)


def logger(name: str) -> Any:
    """`logging.getLogger(name)`, with a pending run's handler installed first."""
    import logging

    if _pending is not None and _installed is None:
        _install(_pending)
    return logging.getLogger(name)


def route(*, verbose: bool) -> None:
    """Send the `agentapps` loggers to `sys.stderr` (as it is now) until `unroute()`: warnings, and
    debug records with `verbose`, each line prefixed with its level."""
    global _pending, _stream
    _pending, _stream = verbose, sys.stderr
    if verbose or "logging" in sys.modules:
        _install(verbose)
    elif not any(isinstance(f, _WhenImported) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenImported())


def unroute() -> None:
    """Undo `route()`: the handler goes, the logger's level and propagation come back."""
    global _pending, _installed, _stream
    _pending, _stream = None, None
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _WhenImported)]
    if _installed is not None:
        log, handler, level, propagate = _installed
        _installed = None
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate


def _install(verbose: bool) -> None:
    global _installed
    import logging

    class Format(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"{record.levelname.lower()}: {super().format(record)}"

    log = logging.getLogger("agentapps")
    handler = logging.StreamHandler(_stream if _stream is not None else sys.stderr)
    handler.setFormatter(Format("%(message)s"))
    _installed = (log, handler, log.level, log.propagate)
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose else logging.WARNING)
    log.propagate = False


class _WhenImported:
    """A finder that lets `logging` load as usual, then installs a pending route (once)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "logging":
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenInstall(spec.loader)  # type: ignore[assignment]  # duck-typed loader
        return spec


class _ThenInstall:
    """The `logging` package's own loader, followed by the pending route's handler."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        if _pending is not None and _installed is None:
            _install(_pending)
