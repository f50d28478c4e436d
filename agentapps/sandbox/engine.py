"""One mini-racer isolate on a private event-loop thread, reached only through cancelable evals.

mini-racer binds an isolate to the asyncio loop running when it is created, and its blocking
helpers (`eval`, calling a JSFunction, awaiting a JSPromise, and the promise resolution inside
`wrap_py_function`) wait on the isolate's single thread. When agent code spins in a microtask
(`for(;;) await null`), or in the synchronous part of a snippet while a wrapped Python function
returns, that wait never ends and freezes the loop, so a timeout on that loop never fires
(measured with mini-racer 0.14 / V8 14.4). So: the isolate lives on a private loop thread;
after the trusted prelude only `eval_cancelable` is used (it only schedules a task, and a string
comes back); the caller's loop applies the wall-clock timeout, whose cancellation terminates the
running task; and an isolate that may still be busy is closed (`mr_free_context` terminates
whatever runs, microtasks included) rather than awaited.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

    from py_mini_racer import MiniRacer

T = TypeVar("T")


class IsolateMemoryError(Exception):
    """The isolate hit its hard heap limit; V8 terminated the running JavaScript."""


class IsolateFault(Exception):
    """The bridge misbehaved (tampered with, or an internal bug); the isolate cannot be trusted."""


class Engine:
    """Owns the isolate and the private event loop mini-racer delivers its results to."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="agentapps-sandbox", daemon=True
        )
        self._box: list[MiniRacer] = []  # the live isolate, if any (a list so finalize can see it)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._thread, self._box)

    # -- lifecycle -------------------------------------------------------------------------

    def open_sync(self, prelude: str, heap_bytes: int) -> None:
        self._submit(_open(self._box, prelude, heap_bytes)).result()

    async def open(self, prelude: str, heap_bytes: int) -> None:
        """Start an isolate if there is none (an earlier reset may have been interrupted)."""
        await asyncio.wrap_future(self._submit(_open(self._box, prelude, heap_bytes)))

    async def reopen(self, prelude: str, heap_bytes: int) -> None:
        """Close the current isolate (terminating anything still running) and start a new one."""
        await asyncio.wrap_future(self._submit(_teardown(self._box)))
        await self.open(prelude, heap_bytes)

    def reopen_sync(self, prelude: str, heap_bytes: int) -> None:
        if not self.closed:
            self._submit(_teardown(self._box)).result()
            self.open_sync(prelude, heap_bytes)

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    @property
    def ready(self) -> bool:
        """An isolate is open (only open/teardown change this, and callers await those)."""
        return bool(self._box)

    # -- evaluation ------------------------------------------------------------------------

    async def eval(self, *codes: str) -> Any:
        """Run `codes` in order (microtasks drain between them) and return the last value."""
        return await asyncio.wrap_future(self._submit(_eval(self._box, codes)))

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        if self.closed:
            coro.close()
            raise RuntimeError("this Sandbox is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)


async def _open(box: list[MiniRacer], prelude: str, heap_bytes: int) -> None:
    from py_mini_racer import MiniRacer

    if box:
        return
    mr = MiniRacer()  # binds to the running loop: ours
    box.append(mr)
    mr.set_hard_memory_limit(heap_bytes)
    mr.eval(prelude)  # a fresh isolate runs nothing else, so this blocking eval cannot hang


async def _eval(box: list[MiniRacer], codes: tuple[str, ...]) -> Any:
    from py_mini_racer import JSEvalException, JSOOMException

    if not box:
        raise IsolateFault("the isolate is gone")
    mr = box[0]
    value: Any = None
    try:
        for code in codes:
            value = await mr.eval_cancelable(code)
    except JSOOMException as exc:
        raise IsolateMemoryError(str(exc)) from None
    except JSEvalException as exc:
        if mr.was_hard_memory_limit_reached():
            raise IsolateMemoryError(str(exc)) from None
        raise IsolateFault(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if mr.was_hard_memory_limit_reached():  # hit inside a microtask, after the task returned
        raise IsolateMemoryError("JavaScript memory limit reached")
    return value


async def _teardown(box: list[MiniRacer]) -> None:
    """Let cancelled evals finish their cleanup, then free the isolate (this terminates JS)."""
    me = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not me]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    while box:
        box.pop().close()


def _shutdown(loop: asyncio.AbstractEventLoop, thread: threading.Thread, box: list[Any]) -> None:
    if thread is threading.current_thread():  # pragma: no cover - never closed from its own loop
        raise RuntimeError("a Sandbox cannot be closed from its own isolate thread")
    asyncio.run_coroutine_threadsafe(_teardown(box), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()
