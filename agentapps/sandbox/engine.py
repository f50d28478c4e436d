"""One V8 isolate in its own process (child.py), driven only through the bridge object the prelude
returns: string properties set and read, nothing else.

The isolate used to share the host process, where a V8 fatal error (`"x".repeat(2**28)`), an
unmetered compiler zone (`eval('x=1;'.repeat(2**25))` reached 3.8 GB) or a builtin that ignores
termination took the host down or past its timeout. Now the process is the unit of failure: the
caller applies the wall-clock timeout and kills the process on it, RLIMIT_DATA caps its memory,
and any death reads as a failed snippet. An Engine is never reused after a failure; the Sandbox
starts a new one. The process starts when the Engine is made (or was started before as a warm
spare: pool.py) and the prelude is posted at once, so both overlap whatever the caller does before
its first snippet.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from agentapps.sandbox import pool
from agentapps.sandbox.process import Death, FrameTooLarge, Op, SandboxDied
from agentapps.sandbox.results import SandboxLimits

T = TypeVar("T")


class IsolateMemoryError(Exception):
    """The isolate hit its hard heap limit; V8 terminated the running JavaScript."""


class IsolateFault(Exception):
    """The bridge misbehaved (tampered with, or an internal bug); the isolate cannot be trusted."""


class IsolateDied(Exception):
    """The sandbox process ended while an evaluation was under way."""


def max_frame(limits: SandboxLimits) -> int:
    """The largest reply the host reads: a poll carries at most about two args' worth of requests,
    three values (return, finish, memory) and the console buffers, each possibly escaped and
    multi-byte; anything larger means the process is not playing by the protocol."""
    return 16 * (limits.max_arg_bytes + limits.max_value_bytes + limits.max_output_chars) + (1 << 20)


class Engine:
    """One sandbox process: `call` sets and reads the bridge's properties in order."""

    def __init__(self, limits: SandboxLimits, prelude: str) -> None:
        self._child = pool.take(limits.heap_bytes, limits.process_bytes, max_frame(limits), prelude)
        self.seeded = False  # the run's `memory` seed is set (Sandbox, before the first snippet)

    @property
    def pid(self) -> int:
        return self._child.pid

    async def started(self) -> None:
        """Wait until the process has evaluated the prelude (raises as `call` does)."""
        failed = await _talk(self._child.settle())
        if failed is not None:
            self._value(*failed)

    async def call(self, *ops: Op) -> str | None:
        """Carry out `ops`, e.g. `("S", "start", code), ("G", "poll")`; return the string the last
        one gave (None for any other value)."""
        return self._value(*await _talk(self._child.request(ops)))

    @staticmethod
    def _value(tag: bytes, payload: bytes) -> str | None:
        if tag == b"V":
            return payload.decode("utf-8", "replace")
        if tag == b"N":
            return None
        message = payload.decode("utf-8", "replace")
        if tag == b"M":
            raise IsolateMemoryError(message)
        raise IsolateFault(message.strip().splitlines()[0] if message.strip() else "unknown error")

    async def death(self) -> Death:
        return await self._child.death()

    def kill(self) -> None:
        self._child.kill()

    def reap(self, wait: float) -> bool:
        """Kill and wait for the exit up to `wait` seconds; True once the process is gone."""
        return self._child.reap(wait)


async def _talk(exchange: Awaitable[T]) -> T:
    try:
        return await exchange
    except SandboxDied:
        raise IsolateDied from None
    except FrameTooLarge as exc:
        raise IsolateFault(str(exc)) from None
