"""Running the onion without an event loop when nothing in it waits, and lending one when a call does.

A code skill that only computes and calls other skills never waits on I/O, yet importing asyncio
and starting a loop would cost more than the rest of its run. So the command line drives such a
run's coroutine by hand (`drive`): the onion's own awaits finish at once. A call whose skill (or a
middleware in its chain) really waits — a markdown skill's agent, `shell`, `http`, the stores, MCP
tools, anything importing asyncio or a library outside the standard one — is handed to a helper
thread running one event loop for the rest of the process (`Loan`), and the driving thread blocks
until it is done. The loop is one per process, so what lives on it (MCP sessions, the event bus,
callback futures) stays usable from one call to the next. Which skills need the loop is decided
from their source's imports when they are loaded (`tools.loopscan`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_running() -> bool:
    """Whether this thread is inside a running asyncio loop (without importing asyncio to ask)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and asyncio._get_running_loop() is not None


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on this thread with no event loop. A bare `yield` (asyncio.sleep(0)) just
    continues; anything else yielded means a wait this driver cannot serve: a bug in the
    classification of some skill, reported as such."""
    try:
        while True:
            yielded = coro.send(None)
            if yielded is not None:
                coro.throw(RuntimeError("a skill waited on an event loop, but this call runs without one "
                                        "(its skill was not recognised as needing one: this is a bug)"))
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


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


async def blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a blocking function (a terminal prompt) without stalling a running loop: in a worker
    thread when there is one, directly when the call is being driven without a loop."""
    if loop_running():
        import asyncio

        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)
