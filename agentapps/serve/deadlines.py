"""The server's time limit on runs (`--timeout`), kept by one timer for all of them.

Every run gets the same limit, so runs reach it in the order they started: a queue in that order
and one timer, armed for the oldest run still going, do what `asyncio.timeout` per run did. That
scheduled and cancelled a timer handle per run (about 50 000 of the 670 000 instructions of a
trivial `/invocations` request); here a run costs a queue entry. A run past its limit has its task
cancelled, and leaving `limit()` turns that cancellation into `TimeoutError` as `asyncio.timeout`
does: only when no one else cancelled the task meanwhile (the server stopping is not a timeout).
"""

from __future__ import annotations

import asyncio
from collections import deque
from types import TracebackType
from typing import Self

COMPACT = 64  # finished runs left behind a long one before the queue is swept


class Watch:
    """One run's limit, as `async with`: its deadline (loop time), its task, and whether the run
    is still going and has expired."""

    __slots__ = ("cancelling", "deadline", "deadlines", "expired", "going", "task")

    def __init__(self, deadlines: Deadlines, task: asyncio.Task[object]) -> None:
        self.deadlines, self.task = deadlines, task
        self.deadline = deadlines.loop.time() + deadlines.limit
        self.cancelling = task.cancelling()  # cancellations requested before the run began
        self.going, self.expired = True, False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.deadlines.end(self)
        # the limit's own cancellation is withdrawn whatever the run did with it
        if self.expired and self.task.uncancel() <= self.cancelling and kind is not None \
                and issubclass(kind, asyncio.CancelledError):
            raise TimeoutError from exc


class Deadlines:
    """The runs going on one event loop, in the order they started, and one timer."""

    def __init__(self, limit: float, loop: asyncio.AbstractEventLoop) -> None:
        self.limit, self.loop = limit, loop
        self.queue: deque[Watch] = deque()
        self.going = 0
        self.timer: asyncio.TimerHandle | None = None

    def limit_run(self) -> Watch:
        """The limit of the run the current task is about to await (`async with`)."""
        task = asyncio.current_task(self.loop)
        if task is None:
            raise RuntimeError("a run's time limit is kept in a task")
        found = Watch(self, task)
        self.queue.append(found)
        self.going += 1
        if self.timer is None:
            self.timer = self.loop.call_at(found.deadline, self._expire)
        return found

    def end(self, watch: Watch) -> None:
        """The run ended: it is no longer timed (its entry leaves the queue once it is at the head)."""
        if not watch.going:
            return
        watch.going = False
        self.going -= 1
        queue = self.queue
        while queue and not queue[0].going:
            queue.popleft()
        if len(queue) > COMPACT and len(queue) > 2 * self.going:  # finished ones behind a long run
            self.queue = deque(w for w in queue if w.going)

    def _expire(self) -> None:
        self.timer = None
        now = self.loop.time()
        queue = self.queue
        while queue:
            head = queue[0]
            if head.going:
                if head.deadline > now:
                    break
                head.expired = True
                head.task.cancel()
            queue.popleft()
        if queue:
            self.timer = self.loop.call_at(queue[0].deadline, self._expire)
