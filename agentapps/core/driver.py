"""Running the onion without an event loop when nothing in it waits, and lending one when a call does.

A code skill that only computes and calls other skills never waits on I/O, yet importing asyncio
and starting a loop would cost more than the rest of its run. So the command line drives such a
run's coroutine by hand (`drive`): the onion's own awaits finish at once. A call whose skill (or a
middleware in its chain) may wait (a markdown skill's agent, `shell`, the stores, MCP tools,
anything reaching asyncio or a library outside the standard one) is handed to the loop lent on a
helper thread (core/loan.py), and the driving thread blocks until it is done. Which skills need
the loop is decided from what their source imports (tools/loopscan.py, checked against the code
by tests/core/test_loopscan.py).

Why two ways to drive a run, measured (issue 21): the same checkout with every run on asyncio
(`asyncio.run` for `run` and for the discovery commands), against this driver, `--quick`, two runs
each on this 2-core machine shared with other work (load 1.4-2.7):

    benchmarks/cold_start.py  `run hello --name Ada`   driven 5.08x, 5.24x, 5.16x   asyncio 10.05x, 7.95x   target <= 6x
    benchmarks/cli_speed.py   `list`                   driven 4.98x, 5.07x          asyncio 8.67x, 8.97x    target <= 8x

(`--help` and the markdown runs, on the loop either way, stayed within their noise.) The difference
is mostly asyncio's own import, which pulls in ssl, socket, concurrent.futures and logging: 50-77 ms
under `python -X importtime` here. The cold-start targets do not hold without the loop-free path,
so it stays.
"""

from __future__ import annotations

import sys
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


async def blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a blocking function (a terminal prompt) without stalling a running loop: in a worker
    thread when there is one, directly when the call is being driven without a loop."""
    if loop_running():  # then asyncio is imported: this module imports it nowhere (tools/loopscan.py)
        return await sys.modules["asyncio"].to_thread(fn, *args, **kwargs)  # type: ignore[no-any-return]
    return fn(*args, **kwargs)
