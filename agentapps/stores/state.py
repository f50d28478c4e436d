"""The key-value state interface (`StateStore`), the memory backend, and `store_for`, which gives a
call the backend it asks for: `memory` (this process), `file` (filestate.py) or `redis` (redisstate.py).
"""

from __future__ import annotations

import asyncio
import builtins
import json
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from agentapps.stores.config import backend
from agentapps.stores.filestate import FileStateStore, read_state_file
from agentapps.stores.keys import (
    MAX_KEY_CHARS,
    MISSING,
    check_expect,
    decode_name,
    dump,
    encode_key,
    timed_out,
    validate_key,
)
from agentapps.stores.slots import STATE_STORES

if TYPE_CHECKING:
    from agentapps.context.context import Globals

__all__ = ["MAX_KEY_CHARS", "MISSING", "FileStateStore", "MemoryStateStore", "StateStore", "decode_name",
           "encode_key", "read_state_file", "store_for", "validate_key"]


class StateStore(Protocol):
    """What the state skills need from a backend (times in seconds).

    `set` with `expect` writes only if the key holds that value now (JSON equality; None means
    absent), as one atomic step, else raises ConflictError; `ttl` makes the key vanish after that
    many seconds (None: it stays). `wait` returns the key's value as soon as it exists, or raises
    LimitError after `timeout`. Keys are 1-256 characters without control characters; values are
    JSON. Every backend redacts declared secrets from what it stores.
    """

    def get(self, key: str) -> Any | None: ...
    def set(self, key: str, value: Any, *, expect: Any = MISSING, ttl: float | None = None) -> None: ...
    def delete(self, key: str) -> bool: ...
    def list(self, prefix: str = "") -> builtins.list[str]: ...
    async def wait(self, key: str, timeout: float) -> Any: ...


class MemoryStateStore:
    """Process-lifetime state; values are stored as JSON text, so callers get fresh copies. Any
    thread may write; waiters (on any event loop) are woken by the write itself."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[str, float | None]] = {}  # key -> (JSON, monotonic expiry)
        self._lock = threading.Lock()
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    def _text(self, key: str) -> str | None:
        found = self._data.get(key)
        if found is None:
            return None
        if found[1] is not None and found[1] <= time.monotonic():
            del self._data[key]
            return None
        return found[0]

    def get(self, key: str) -> Any | None:
        with self._lock:
            text = self._text(validate_key(key))
        return None if text is None else json.loads(text)

    def set(self, key: str, value: Any, *, expect: Any = MISSING, ttl: float | None = None) -> None:
        text = dump(value)
        with self._lock:
            current = self._text(validate_key(key))
            check_expect(key, None if current is None else json.loads(current), expect)
            self._data[key] = (text, None if ttl is None else time.monotonic() + ttl)
            waiters = self._waiters.pop(key, [])
        for loop, future in waiters:
            loop.call_soon_threadsafe(_wake, future)

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._text(validate_key(key)) is not None and self._data.pop(key, None) is not None

    def list(self, prefix: str = "") -> builtins.list[str]:
        with self._lock:
            return sorted(k for k in list(self._data) if k.startswith(prefix) and self._text(k) is not None)

    async def wait(self, key: str, timeout: float) -> Any:
        validate_key(key)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            with self._lock:
                text = self._text(key)
                if text is None:
                    future: asyncio.Future[None] = loop.create_future()
                    self._waiters.setdefault(key, []).append((loop, future))
            if text is not None:
                return json.loads(text)
            try:
                await asyncio.wait_for(future, max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise timed_out(key, timeout) from None
            finally:
                with self._lock:
                    mine = self._waiters.get(key, [])
                    if (loop, future) in mine:
                        mine.remove((loop, future))


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def store_for(g: Globals, kind: str | None = None) -> StateStore:
    """The process's state store of `kind` (None: the project's default), made once."""
    kind = backend(g, "state", kind)
    stores = g.internals.get(STATE_STORES)
    found = stores.get(kind)
    if found is None:
        redact = g.internals.redactor.redact_data
        if kind == "memory":
            found = MemoryStateStore()
        elif kind == "file":
            found = FileStateStore(g.config.data_dir / "state", redact=redact)
        else:
            from agentapps.stores.config import link_for
            from agentapps.stores.redisstate import RedisStateStore

            found = RedisStateStore(link_for(g), redact=redact)
        stores[kind] = found
    return found
