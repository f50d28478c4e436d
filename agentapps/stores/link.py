"""The Redis connection: AGENTAPPS_REDIS_URL, a password kept out of every message, namespaced keys,
reconnection with backoff, connection errors as StoreUnavailableError, and a pool of threads for
blocking reads (so a wait never blocks the event loop).

The client is redis-py's synchronous one: a blocking read (XREADGROUP BLOCK, BLPOP, pub/sub) runs in
this link's thread pool in slices of `SLICE` seconds, checking between slices whether its caller
gave up, so a cancelled wait frees its thread within a slice. Every other command is one quick
round trip on the caller's thread.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import unquote, urlsplit

from agentapps.errors import ConfigError, StoreCorruptError, StoreUnavailableError

if TYPE_CHECKING:
    import redis

    from agentapps.secrets import Redactor

URL_ENV: Final = "AGENTAPPS_REDIS_URL"
PASSWORD_ENV: Final = "AGENTAPPS_REDIS_PASSWORD"
RECONNECT_ENV: Final = "AGENTAPPS_REDIS_RECONNECT"  # seconds of retrying a lost connection
DEFAULT_URL: Final = "redis://127.0.0.1:6379/0"
DEFAULT_RECONNECT: Final = 10.0
SLICE: Final = 0.25  # seconds a blocking read holds its thread before checking for cancellation
T = TypeVar("T")


def _reconnect_budget() -> float:
    text = os.environ.get(RECONNECT_ENV)
    if not text:
        return DEFAULT_RECONNECT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise ConfigError(f"{RECONNECT_ENV} must be a number of seconds from 0 to 3600, got {text[:40]!r}.")
    return value


def _retries_for(budget: float, base: float = 0.05, cap: float = 1.0) -> int:
    """How many retries of redis-py's ExponentialBackoff(cap, base) fit in `budget` seconds."""
    slept, failures = 0.0, 0
    while slept < budget:
        failures += 1
        slept += min(cap, base * 2**failures)
    return failures


class RedisLink:
    """One server and one project namespace: `key(...)` makes `agentapps:{namespace}:...` keys."""

    def __init__(self, url: str, namespace: str, redactor: Redactor) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ConfigError(f"{URL_ENV} must start with redis://, rediss:// or unix:// "
                              f"(got '{parts.scheme or '(none)'}://...').")
        password = unquote(parts.password) if parts.password else os.environ.get(PASSWORD_ENV) or None
        if password:  # never printed: every writer of this process redacts it from now on
            redactor.register(PASSWORD_ENV, password)
            redactor.register(URL_ENV, url)
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(f"{URL_ENV} has an invalid port.") from None
        self.where = parts.path if parts.scheme == "unix" else f"{parts.hostname or '127.0.0.1'}:{port or 6379}"
        self.namespace = namespace
        self.prefix = f"agentapps:{namespace}:"
        self.redactor = redactor
        self.reached = False  # once the server has answered, losing it is a failure mid-run (exit 1)
        self.budget = _reconnect_budget()
        self.stopping = threading.Event()  # set at close: blocking reads end within a slice
        self.on_close: list[Callable[[], None]] = []  # run before disconnecting (release callbacks)
        self.services: dict[str, Any] = {}  # per-link helpers their modules make (callback heartbeat)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._held = threading.local()  # per thread: the connection scripts are sent on, and its process
        import redis as redis_module
        from redis.backoff import ExponentialBackoff, NoBackoff
        from redis.retry import Retry

        self.errors: tuple[type[Exception], ...] = (redis_module.ConnectionError, redis_module.TimeoutError)
        self._refused: type[Exception] = redis_module.AuthenticationError
        self._answered: type[Exception] = redis_module.ResponseError
        self._retry = Retry(ExponentialBackoff(cap=1.0, base=0.05), _retries_for(self.budget))
        kwargs: dict[str, Any] = {"socket_connect_timeout": 2.0, "socket_keepalive": True,
                                  "retry": Retry(NoBackoff(), 0), "retry_on_error": list(self.errors)}
        if password and not parts.password:
            kwargs["password"] = password
        try:
            self.client: redis.Redis = redis_module.Redis.from_url(url, **kwargs)
        except ValueError as exc:
            raise ConfigError(self.redactor.redact(f"{URL_ENV} is not a usable Redis URL: {exc}")) from None

    def connect(self) -> None:
        """Check the server answers now (exit 2 when it does not), then retry lost connections."""
        if self.reached:
            return
        self.call(self.client.ping)
        self.client.set_retry(self._retry)

    def set_reconnect(self, seconds: float) -> None:
        """Retry a lost connection for about `seconds` per call (the default: AGENTAPPS_REDIS_RECONNECT)."""
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        self.budget = seconds
        self._retry = Retry(ExponentialBackoff(cap=1.0, base=0.05), _retries_for(seconds))
        if self.reached:
            self.client.set_retry(self._retry)

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def script(self, text: str) -> Callable[..., Any]:
        """A Lua script as a function `run(keys, *args)`: EVALSHA, loading it again when the server
        lost it (a restart), sent on this thread's own connection (see `_round_trip`)."""
        import hashlib

        import redis as redis_module

        sha = hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()
        round_trip = self._round_trip

        def run(keys: list[str], *args: Any) -> Any:
            try:
                return round_trip("EVALSHA", sha, len(keys), *keys, *args)
            except redis_module.exceptions.NoScriptError:
                round_trip("SCRIPT", "LOAD", text)
                return round_trip("EVALSHA", sha, len(keys), *keys, *args)

        return run

    def _round_trip(self, *command: Any) -> Any:
        """One command and its reply on a connection this thread keeps, with the client's retries.

        redis-py's `execute_command` takes a connection from the pool and gives it back for every
        command, and taking one polls its socket (a system call) to make sure no stale reply waits
        on it. A connection this thread keeps needs no such look: any failure between sending and
        reading the reply (an interrupt included) closes it, so a reply is never read as another's.
        `execute_command` took 1.6 to 1.7x this path's CPU per call (measured 2026-11-28;
        tests/stores/test_link.py fails below 1.25x)."""
        held = self._held
        conn = getattr(held, "conn", None)
        if conn is None or held.pid != os.getpid():  # a forked child takes its own
            conn = held.conn = self.client.connection_pool.get_connection()
            held.pid = os.getpid()

        def once() -> Any:
            conn.send_command(*command)
            return conn.read_response()

        try:
            return conn.retry.call_with_retry(once, lambda error: conn.disconnect())
        except self._answered:
            raise  # the reply was read whole: the connection is in step
        except BaseException:
            conn.disconnect()  # the next command reconnects
            raise

    def names(self, head: str, prefix: str = "") -> list[str]:
        """The sorted names after `head` of the keys that start with `head + prefix` (SCAN, which
        never blocks the server the way KEYS would)."""
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in head + prefix) + "*"
        found = self.call(lambda: list(self.client.scan_iter(match=pattern, count=1000)))
        return sorted(n.decode("utf-8")[len(head):] for n in found)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one client call; a lost server becomes StoreUnavailableError naming host and port."""
        try:
            result = fn(*args, **kwargs)
        except self._refused as exc:  # an AuthenticationError is a ConnectionError, but no retry can help
            raise ConfigError(self._said(f"Redis at {self.where} refused the credentials ({exc}); check the "
                                         f"password in {URL_ENV} or {PASSWORD_ENV}.")) from None
        except self.errors as exc:
            raise self.unavailable(exc) from None
        except self._answered as exc:
            if "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
                raise ConfigError(self._said(f"Redis at {self.where} needs a password ({exc}); put it in "
                                             f"{URL_ENV} or {PASSWORD_ENV}.")) from None
            if str(exc).startswith("WRONGTYPE"):
                raise StoreCorruptError(f"A key under '{self.prefix}' on the Redis server at {self.where} "
                                        "holds data agentapps did not write; it was left untouched — "
                                        "remove it, or give this project another `stores.namespace`.") from None
            raise
        self.reached = True
        return result

    def unavailable(self, exc: BaseException) -> StoreUnavailableError:
        why = " ".join(str(exc).split()) or type(exc).__name__
        if self.reached:
            text = (f"Lost the Redis server at {self.where} and could not reconnect within {self.budget:g} s "
                    f"({why}); the call was not completed.")
        else:
            text = (f"Cannot reach Redis at {self.where} ({why}); start it, or point {URL_ENV} at a "
                    "running server.")
        return StoreUnavailableError(self._said(text), at_start=not self.reached)

    def _said(self, text: str) -> str:
        return self.redactor.redact(text)

    async def slices(self, read: Callable[[float], T | None], timeout: float | None,
                     orphan: Callable[[T], None] | None = None) -> T | None:
        """Call the blocking `read(seconds)` on this link's threads, one slice of at most SLICE seconds
        at a time, until it returns something or `timeout` seconds (None: no limit) pass (then None).

        Between slices the event loop is free and the caller can be cancelled; a slice that was
        running then still finishes on its thread, and what it read goes to `orphan` (e.g. to put
        stream entries back) instead of being lost.
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            left = SLICE if deadline is None else min(SLICE, deadline - loop.time())
            if left <= 0 or self.stopping.is_set():
                return None
            job = self._threads().submit(read, left)
            try:
                got = await asyncio.wrap_future(job)
            except asyncio.CancelledError:
                if orphan is not None:
                    job.add_done_callback(lambda done: _hand_back(done, orphan))
                raise
            if got:
                return got

    def _threads(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="agentapps-redis")
            return self._pool

    def close(self) -> None:
        self.stopping.set()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


def _hand_back(done: Any, orphan: Callable[[Any], None]) -> None:
    if done.cancelled() or done.exception() is not None or not done.result():
        return
    try:
        orphan(done.result())
    except Exception:  # noqa: BLE001, S110 - best effort: unreturned entries are redelivered later anyway
        pass


def redis_url() -> str:
    return os.environ.get(URL_ENV) or DEFAULT_URL
