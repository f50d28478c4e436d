"""Running the root coroutine: --timeout, and SIGINT/SIGTERM that stop cleanly within 2 seconds.

Signals are caught with `signal.signal` (not the event loop's handlers), so they are seen even while
a skill blocks the loop in synchronous code. The first signal cancels the run so `finally` blocks
clean up (child processes, isolates, sessions saved as interrupted); if that has not finished after
a grace period, or on a second signal, the child process groups are killed and the process exits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any

from agentapps.context.context import Globals
from agentapps.core.cleanup import run_cleanups
from agentapps.errors import InterruptedError_, LimitError

GRACE_SECONDS = 1.0


def _kill_children(g: Globals) -> None:
    for pgid in list(g.internals.get("children") or ()):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _hard_exit(g: Globals, code: int, message: str) -> None:
    _kill_children(g)
    try:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()
    finally:
        os._exit(code)


def _timer(seconds: float, fn: Any, *args: Any) -> threading.Timer:
    timer = threading.Timer(seconds, fn, args)
    timer.daemon = True
    timer.start()
    return timer


async def _supervised(coro: Coroutine[Any, Any, Any], g: Globals, timeout: float | None) -> Any:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    timers: list[threading.Timer] = []

    def on_signal(signum: int, frame: Any) -> None:
        name = "Interrupted" if signum == signal.SIGINT else "Terminated"
        if g.signal.aborted and g.signal.signal_number:  # a second signal: stop waiting for cleanup
            _hard_exit(g, 128 + signum, f"{name} (second signal); cleanup skipped.")
        g.signal.abort(f"{name}.", signum)
        loop.call_soon_threadsafe(task.cancel)
        timers.append(_timer(GRACE_SECONDS, _hard_exit, g, 128 + signum, f"{name}; cleanup did not finish in time."))

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    if timeout is not None:  # a skill blocking the loop cannot stop this one
        message = f"The run took longer than --timeout {timeout:g} s and was stopped."
        timers.append(_timer(timeout + GRACE_SECONDS, _hard_exit, g, LimitError.exit_code, message))
    try:
        if timeout is None:
            return await coro
        try:
            return await asyncio.wait_for(coro, timeout)
        except TimeoutError:
            raise LimitError(f"The run took longer than --timeout {timeout:g} s and was stopped.") from None
    except asyncio.CancelledError:
        if g.signal.aborted and g.signal.signal_number:
            raise InterruptedError_(g.signal.reason or "Interrupted.", signal_number=g.signal.signal_number) from None
        raise
    finally:
        await run_cleanups(g.internals)  # e.g. MCP servers told to stop (a second signal still kills)
        for s, handler in previous.items():
            signal.signal(s, handler)
        _kill_children(g)
        for timer in timers:
            timer.cancel()


def run_supervised(coro: Coroutine[Any, Any, Any], g: Globals, timeout: float | None) -> Any:
    return asyncio.run(_supervised(coro, g, timeout))
