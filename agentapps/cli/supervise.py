"""Running the root coroutine: --timeout, and SIGINT/SIGTERM that stop cleanly within 2 seconds.

Signals are caught with `signal.signal` (not the event loop's handlers), so they are seen even while
a skill blocks the loop in synchronous code. The first signal cancels the run so `finally` blocks
clean up (child processes, isolates, sessions saved as interrupted); if that has not finished after
a grace period, or on a second signal, the child process groups are killed and the process exits.

Hard deadlines (the grace after a signal, and --timeout plus the grace) fire through SIGALRM
(`setitimer`), not a thread: a thread needs the interpreter lock, which Python's `re` holds for the
whole of a backtracking match, while a signal handler still runs there (measured: a timer thread
waited until the match ended; the SIGALRM handler ran on time). For native code that never checks
for signals, watchdog.py kills the run a little later.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Coroutine
from typing import Any

from agentapps.cli.streams import drain_all
from agentapps.context.context import Globals
from agentapps.core.cleanup import run_cleanups
from agentapps.core.driver import drive
from agentapps.core.loan import Loan
from agentapps.errors import InterruptedError_, LimitError

GRACE_SECONDS = 1.0
WATCHDOG_SLACK = 2.0  # after the SIGALRM deadline: only native code that ignores signals gets this far
# (exit code, message, perf_counter time it is printed at) -> (stderr text, stdout text)
Report = Callable[[int, str, float], tuple[str, str]]


def plain_report(code: int, message: str, at: float) -> tuple[str, str]:
    return f"error: {message}\n", ""


def json_report(skill: str | None, started: float) -> Report:
    """What --json prints when the run is stopped from outside: the same object as any failure."""
    def report(code: int, message: str, at: float) -> tuple[str, str]:
        error = {"type": "Interrupted" if code in (130, 143) else "LimitError", "message": message,
                 "exit_code": code, "skill": skill, "file": None, "line": None}
        payload = {"ok": False, "skill": skill, "result": None, "error": error,
                   "duration_ms": round((at - started) * 1000, 1)}
        return f"error: {message}\n", json.dumps(payload, ensure_ascii=False) + "\n"
    return report


def _kill_children(g: Globals) -> None:
    for pgid in list(g.internals.children):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_descendants() -> None:
    """Every process started under this one, tracked or not (a skill's own Popen, say)."""
    from agentapps.cli import watchdog

    for pid in watchdog.descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _hard_exit(g: Globals, code: int, message: str, report: Report) -> None:
    """Kill the children, write what is owed, exit now (may run inside a signal handler)."""
    try:
        _kill_children(g)
        _kill_descendants()
        try:
            drain_all()
        except RuntimeError:  # we interrupted a write to the same stream; what it held is lost
            pass
        err, out = report(code, message, time.perf_counter())
        if out:
            os.write(1, out.encode("utf-8", "replace"))
        os.write(2, err.encode("utf-8", "replace"))
    finally:
        os._exit(code)


class _Deadlines:
    """Deadlines fired by SIGALRM, so they run even while `re` holds the interpreter: hard exits,
    and (for a run driven without an event loop) the --timeout itself, raised where the run is."""

    def __init__(self, g: Globals, report: Report) -> None:
        self.g, self.report = g, report
        self.due: list[tuple[float, int, str]] = []
        self.soft: tuple[float, str] | None = None
        self.timed_out = False  # the soft deadline fired
        self.previous = signal.signal(signal.SIGALRM, self._fire)

    def add(self, seconds: float, code: int, message: str) -> None:
        self.due.append((time.monotonic() + seconds, code, message))
        self._arm()

    def raise_at(self, seconds: float, message: str) -> None:
        """Raise LimitError(message) in the main thread after `seconds` (the run then unwinds)."""
        self.soft = (time.monotonic() + seconds, message)
        self._arm()

    def _arm(self) -> None:
        times = [when for when, _, _ in self.due] + ([self.soft[0]] if self.soft else [])
        if times:
            signal.setitimer(signal.ITIMER_REAL, max(min(times) - time.monotonic(), 0.001))

    def _fire(self, signum: int, frame: Any) -> None:
        now = time.monotonic()
        for when, code, message in sorted(self.due):
            if when <= now:
                _hard_exit(self.g, code, message, self.report)
        if self.soft is not None and self.soft[0] <= now:
            message, self.soft = self.soft[1], None
            self.timed_out = True
            self._arm()
            raise LimitError(message)
        self._arm()  # woken early (a rounding of the timer): wait for the rest

    def close(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)


async def _supervised(coro: Coroutine[Any, Any, Any], g: Globals, timeout: float | None,
                      deadlines: _Deadlines) -> Any:
    import asyncio

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None

    def on_signal(signum: int, frame: Any) -> None:
        name = "Interrupted" if signum == signal.SIGINT else "Terminated"
        if g.signal.aborted and g.signal.signal_number:  # a second signal: stop waiting for cleanup
            _hard_exit(g, 128 + signum, f"{name} (second signal); cleanup skipped.", deadlines.report)
        g.signal.abort(f"{name}.", signum)
        loop.call_soon_threadsafe(task.cancel)
        deadlines.add(GRACE_SECONDS, 128 + signum, f"{name}; cleanup did not finish in time.")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
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


def _driven(coro: Coroutine[Any, Any, Any], g: Globals, timeout: float | None, deadlines: _Deadlines) -> Any:
    """The run driven without an event loop (core/driver.py): a signal or the --timeout raises
    where the run is, so its finally blocks clean up; calls that wait ran on the lent loop, whose
    cleanups run before it stops. A run stopped this way leaves no process behind, not even one
    the skill started itself (as when a stuck run is stopped by the hard deadline)."""
    def on_signal(signum: int, frame: Any) -> None:
        name = "Interrupted" if signum == signal.SIGINT else "Terminated"
        if g.signal.aborted and g.signal.signal_number:  # a second signal: stop waiting for cleanup
            _hard_exit(g, 128 + signum, f"{name} (second signal); cleanup skipped.", deadlines.report)
        g.signal.abort(f"{name}.", signum)
        deadlines.add(GRACE_SECONDS, 128 + signum, f"{name}; cleanup did not finish in time.")
        raise InterruptedError_(f"{name}.", signal_number=signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    if timeout is not None:
        deadlines.raise_at(timeout, f"The run took longer than --timeout {timeout:g} s and was stopped.")
    try:
        return drive(coro)
    finally:
        finish_driven(g)
        for s, handler in previous.items():
            signal.signal(s, handler)
        _kill_children(g)
        if g.signal.aborted or deadlines.timed_out:
            _kill_descendants()


def finish_driven(g: Globals) -> None:
    """After a run driven without a loop: the lent loop's cleanups (MCP sessions...), then stop it."""
    loan, g.internals.loan = g.internals.loan, None
    if loan is None and g.internals.cleanups:
        loan = Loan()  # cleanups registered outside any loan (a listing's helper thread): they need one
    if loan is not None:
        loan.close(lambda: run_cleanups(g.internals))


def run_supervised(coro: Coroutine[Any, Any, Any], g: Globals, timeout: float | None,
                   report: Report = plain_report, *, loop: bool = True) -> Any:
    """Run the top-level call `coro` under signals and --timeout: on an event loop when its skill
    needs one (`loop`), else driven without one (nothing imports asyncio for a plain code skill)."""
    deadlines = _Deadlines(g, report)
    guard: int | None = None
    if timeout is not None:  # a skill blocking the loop cannot stop these
        message = f"The run took longer than --timeout {timeout:g} s and was stopped."
        deadlines.add(timeout + GRACE_SECONDS, LimitError.exit_code, message)
        last = timeout + GRACE_SECONDS + WATCHDOG_SLACK
        killed = f"{message[:-1]}: it was stuck in native code that ignores signals, so it was killed."
        err, out = report(128 + signal.SIGKILL, killed, time.perf_counter() + last)
        from agentapps.cli import watchdog

        guard = watchdog.start(last, err, out)
    try:
        if not loop:
            return _driven(coro, g, timeout, deadlines)
        import asyncio

        return asyncio.run(_supervised(coro, g, timeout, deadlines))
    finally:
        deadlines.close()
        if guard is not None:
            os.close(guard)
