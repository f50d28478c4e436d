"""Read a blocking SDK stream in a worker thread, so cancellation is noticed while a read blocks.

Used by the OpenAI provider (Bedrock has its own copy tuned to boto3's event stream). The caller
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
from typing import Any, TypeVar

from agentapps.errors import RunInterruptedError
from agentapps.providers.bedrock_errors import IncompleteStreamError, StreamFailed

POLL_SECONDS = 0.05  # how often a blocked stream re-checks cancelled()
T = TypeVar("T")


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
