"""Read a blocking SDK stream in a worker thread, so cancellation is noticed while a read blocks.

Used by the OpenAI and Anthropic providers (Bedrock has its own copy tuned to boto3's event stream),
with `retried`, their one retry loop. The caller
gives three functions: `open_stream()` makes the request and returns an iterable of events (with
`close()`), `feed(event)` folds one event in the caller's thread, and `finish()` returns the turn
once the stream has ended. A failure of the request or of the stream comes back as `StreamFailed`;
an error raised by `feed` or `finish` (a callback's, or IncompleteStreamError) is the caller's.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from agentapps.errors import RunInterruptedError
from agentapps.providers.bedrock_errors import (
    IncompleteStreamError,
    StreamFailed,
    backoff_delay,
    pause,
)

POLL_SECONDS = 0.05  # how often a blocked stream re-checks cancelled()
T = TypeVar("T")
OnRetry = Callable[[int, float, str], None]


def close_quietly(stream: Any) -> None:
    with contextlib.suppress(Exception):  # best effort: the connection may already be gone
        stream.close()


def _pump(open_stream: Callable[[], Iterable[Any]], out: queue.Queue[tuple[str, Any]],
          stop: threading.Event) -> None:  # fmt: skip
    stream: Any = None
    try:
        stream = open_stream()
        out.put(("stream", stream))
        for event in stream:
            if stop.is_set():
                break
            out.put(("event", event))
        out.put(("end", None))
    except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
        out.put(("error", exc))
    finally:
        if stream is not None and stop.is_set():
            close_quietly(stream)


def read_stream(
    open_stream: Callable[[], Iterable[Any]], feed: Callable[[Any], None], finish: Callable[[], T],
    cancelled: Callable[[], bool] | None, *, service: str,
) -> T:  # fmt: skip
    """One attempt: the whole stream folded by `feed`, then `finish()`; see the module doc."""
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    worker = threading.Thread(target=_pump, args=(open_stream, events, stop),
                              name=f"{service.lower()}-stream", daemon=True)  # fmt: skip
    worker.start()
    stream: Any = None
    try:
        while True:
            if cancelled is not None and cancelled():
                raise RunInterruptedError(f"Interrupted while streaming from {service}.")
            try:
                kind, value = events.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if kind == "stream":
                stream = value
            elif kind == "event":
                feed(value)
            elif kind == "error":
                raise StreamFailed(value)
            else:
                try:
                    return finish()
                except IncompleteStreamError as exc:
                    raise StreamFailed(exc) from None
    finally:
        stop.set()
        if stream is not None:
            close_quietly(stream)


class Vendor(NamedTuple):
    """How one vendor's SDK failures are judged and told: retryable?, the Retry-After it asked for,
    the one-line error after `retries` retries, and the short reason a retry announces."""

    service: str
    is_retryable: Callable[[BaseException], bool]
    retry_after: Callable[[BaseException], float | None]
    explain: Callable[[BaseException, int], Exception]
    describe: Callable[[BaseException], str]


def retried(attempt: Callable[[], T], vendor: Vendor, *, cancelled: Callable[[], bool] | None,
            on_retry: OnRetry | None, max_stream_retries: int, backoff_base: float, backoff_cap: float,
            sleep: Callable[[float], None]) -> T:  # fmt: skip
    """`attempt()` (one streamed turn, see `read_stream`) until it succeeds, retrying a retryable
    failure with backoff (Retry-After honoured up to `backoff_cap`) at most `max_stream_retries`
    times. Retrying a whole turn is safe: its tool calls are returned only once its stream is
    complete, so no tool of it has run. `on_retry(attempt, delay, reason)` tells the caller to
    discard text it already showed."""
    tries = 0
    while True:
        try:
            return attempt()
        except StreamFailed as failed:
            exc = failed.error
            if not vendor.is_retryable(exc) or tries >= max_stream_retries:
                raise vendor.explain(exc, tries) from exc
            asked = vendor.retry_after(exc)
            delay = min(asked, backoff_cap) if asked is not None else backoff_delay(tries, backoff_base, backoff_cap)
            tries += 1
            if on_retry is not None:
                on_retry(tries, delay, vendor.describe(exc))
            pause(delay, sleep, cancelled, vendor.service)
