"""core.awaiting answers as inspect does: what can be awaited, and what state a coroutine is in."""

from __future__ import annotations

import asyncio
import inspect
import types
from collections.abc import Generator
from typing import Any

from agentapps.core.awaiting import CO_ITERABLE_COROUTINE, coroutine_state, isawaitable


class _Awaits:
    def __await__(self) -> Generator[Any, None, int]:
        yield
        return 1


def _plain_generator() -> Generator[int, None, None]:
    yield 1


@types.coroutine
def _generator_coroutine() -> Generator[Any, None, None]:
    yield


async def _native() -> int:
    return 1


async def _async_generator() -> Any:
    yield 1


def test_the_flag_is_inspects():
    assert CO_ITERABLE_COROUTINE == inspect.CO_ITERABLE_COROUTINE


def test_awaitable_as_inspect_says():
    coroutine = _native()
    generator_coroutine = _generator_coroutine()
    agen = _async_generator()
    loop = asyncio.new_event_loop()
    future = loop.create_future()
    values = [coroutine, generator_coroutine, _plain_generator(), _Awaits(), future, agen, None, 1, "x", {}, [],
              object(), _native, _Awaits, asyncio.sleep]
    try:
        for value in values:
            assert isawaitable(value) == inspect.isawaitable(value), value
    finally:
        coroutine.close()
        loop.close()


def test_coroutine_state_as_inspect_says():
    seen: list[tuple[str, str]] = []

    async def watched() -> None:
        seen.append((coroutine_state(coro), inspect.getcoroutinestate(coro)))
        await asyncio.sleep(0)

    coro = watched()
    seen.append((coroutine_state(coro), inspect.getcoroutinestate(coro)))  # created
    assert coro.send(None) is None  # running inside, then suspended at the sleep
    seen.append((coroutine_state(coro), inspect.getcoroutinestate(coro)))
    try:
        coro.send(None)
    except StopIteration:
        pass
    seen.append((coroutine_state(coro), inspect.getcoroutinestate(coro)))  # closed
    closed_early = watched()
    closed_early.close()
    seen.append((coroutine_state(closed_early), inspect.getcoroutinestate(closed_early)))
    assert [ours for ours, _ in seen] == ["CORO_CREATED", "CORO_RUNNING", "CORO_SUSPENDED", "CORO_CLOSED",
                                          "CORO_CLOSED"]
    assert all(ours == theirs for ours, theirs in seen)
