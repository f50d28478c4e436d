"""What `inspect` says of awaitables and coroutines, without importing it: `inspect` pulls in ast,
dis, tokenize and more, milliseconds of every cold start, for two questions answered here alike."""

from __future__ import annotations

from collections.abc import Awaitable
from types import CoroutineType, GeneratorType
from typing import Any

CO_ITERABLE_COROUTINE = 0x100  # a generator `types.coroutine` made awaitable (inspect's constant)

CORO_CREATED = "CORO_CREATED"  # not started
CORO_RUNNING = "CORO_RUNNING"
CORO_SUSPENDED = "CORO_SUSPENDED"  # waiting at an await
CORO_CLOSED = "CORO_CLOSED"  # finished, or closed


def isawaitable(value: object) -> bool:
    """Whether `value` can be awaited: a native coroutine, a generator-based one, or any object
    with `__await__` (inspect.isawaitable's answer)."""
    return (isinstance(value, CoroutineType)
            or isinstance(value, GeneratorType) and bool(value.gi_code.co_flags & CO_ITERABLE_COROUTINE)
            or isinstance(value, Awaitable))


def coroutine_state(coroutine: Any) -> str:
    """One of the CORO_* states of a native coroutine (inspect.getcoroutinestate's answer)."""
    if coroutine.cr_running:
        return CORO_RUNNING
    if coroutine.cr_suspended:
        return CORO_SUSPENDED
    if coroutine.cr_frame is None:
        return CORO_CLOSED
    return CORO_CREATED
