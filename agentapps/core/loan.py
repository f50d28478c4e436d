"""The event loop lent to calls that wait while a run is driven without one (core/driver.py).

One loop on a helper thread for the rest of the process, so what lives on it (MCP sessions, the
event bus, callback futures) stays usable from one call to the next; the driving thread blocks
until the call it handed over is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Loan:
    """One event loop on a helper thread, lent to calls that wait while the main thread drives."""

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="agentapps-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], poll: float = 0.05) -> T:
        """Run `coro` on the loan's loop and wait for it here. An exception raised in this thread
        while waiting (a signal handler's interruption, the --timeout) cancels it, waits a moment
        for its cleanup, and goes on up."""
        import asyncio

        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            while True:
                try:
                    return future.result(timeout=poll)
                except TimeoutError:
                    continue
        except BaseException:
            future.cancel()
            try:
                future.result(timeout=1.0)  # give its finally blocks (isolates, children) a moment
            except BaseException:  # noqa: BLE001, S110 - the cancellation's own outcome is not the news
                pass
            raise

    def close(self, final: Callable[[], Coroutine[Any, Any, Any]] | None = None) -> None:
        """Run `final` (the run's cleanups) on the loop, then stop it and its thread."""
        if final is not None:
            try:
                self.run(final())
            except Exception:  # noqa: BLE001, S110 - cleanups log their own failures
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=2.0)
        if not self.loop.is_running():
            self.loop.close()
