"""The consume loop behind `agentapps worker`: take events from a consumer group, run the handler
for each (at most `concurrency` at once), acknowledge the ones it handled, give back the ones it
failed, and keep going through a Redis restart.

Delivery is at least once. An event is acknowledged only after its handler returned, so a worker
that crashes leaves its events pending and another consumer takes them after the visibility
timeout; a failed event is released at once for another try, and the worker whose try was the
`maxDeliveries`-th moves it to `TOPIC.dead-letter` itself (one atomic step on the server, so a crash
leaves it pending or dead-lettered, never neither nor both). A stream entry that is not an event
never reaches the handler: it counts as failed and is dead-lettered at once. Events still being
handled have their visibility timeout renewed, so a slow handler does not lose its event to another
worker. `stop()` (a signal) ends the taking; `run` then waits for the events in flight,
acknowledges them and returns.

Round trips are few, as each costs more than a quick handler's run. The events handled since the
last read are acknowledged along with the next read (one pipelined round trip; by themselves once
they have waited ACK_WITHIN while every slot is busy). While the handler takes under QUICK seconds
per event (a moving average), a read takes up to READ_AHEAD events beyond the free slots; they wait
in the worker, their visibility timeouts renewed like those being handled, and a stop gives them
back at once (a crash leaves them for the visibility timeout, like the ones in flight). So a crash
can make up to `concurrency` + READ_AHEAD events, plus the ones handled in the last ACK_WITHIN,
come back once more, never lose one. Each of the `concurrency` slots is one task that handles the
events taken one after another, so a quick handler's events cost no task of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentapps.errors import StoreUnavailableError
from agentapps.events.group import DEAD_LETTER, Delivery, Group, MalformedEntry, envelope_of

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
Report = Callable[[str, dict[str, Any]], None]  # ("failed" | "lost" | "back", details)
# (event, the handler's error or None, the "failed" details or None): awaited once per event handled,
# before it counts as handled (the run log's record of it)
Finished = Callable[[dict[str, Any], BaseException | None, dict[str, Any] | None], Awaitable[None]]
RECLAIM_EVERY = 0.5  # seconds between looks for events other consumers held too long
READ_AHEAD = 32  # events a worker with a quick handler takes beyond its free slots, in the same read
QUICK = 0.002  # seconds per event (a moving average): a handler this quick lets the worker read ahead
ACK_WITHIN = 0.05  # seconds a handled event may wait to be acknowledged along with the next read
PACE_WEIGHT = 0.1  # of the latest event in the moving average of the handler's seconds per event


@dataclass
class Tally:
    """The counts a worker reports when it stops."""

    handled: int = 0  # handler runs that ended (succeeded + failed)
    succeeded: int = 0
    failed: int = 0
    acked: int = 0  # acknowledgements the server confirmed
    dead_lettered: int = 0  # events this worker moved to the dead-letter topic
    released: int = 0  # events taken but not started when stopping (read ahead, say), given back at once
    reconnects: int = 0
    started: float = field(default_factory=time.monotonic)

    def as_dict(self) -> dict[str, Any]:
        seconds = time.monotonic() - self.started
        return {"handled": self.handled, "succeeded": self.succeeded, "failed": self.failed,
                "acked": self.acked, "deadLettered": self.dead_lettered, "released": self.released,
                "reconnects": self.reconnects, "durationMs": round(seconds * 1000, 1),
                "eventsPerSecond": round(self.handled / seconds, 1) if seconds > 0 else None}


class Worker:
    def __init__(self, group: Group, handler: Handler, *, concurrency: int = 1, max_events: int | None = None,
                 report: Report | None = None, finished: Finished | None = None) -> None:
        self.group, self.handler, self.concurrency, self.max_events = group, handler, concurrency, max_events
        self.report = report or (lambda what, details: None)
        self.finished = finished
        self.tally = Tally()
        self.stopping = False
        self._flying: set[str] = set()  # ids of the events being handled
        self._waiting: deque[Delivery] = deque()  # taken, not started yet
        self._runners: set[asyncio.Task[None]] = set()  # at most `concurrency`, each handling one event at a time
        self._to_ack: list[str] = []
        self._ack_by = 0.0  # when the oldest of `_to_ack` must go, if no read takes it along first
        self._pace: float | None = None  # the handler's seconds per event, a moving average
        self._next_reclaim = 0.0
        self._next_touch = time.monotonic()

    def stop(self) -> None:
        self.stopping = True

    @property
    def in_flight(self) -> int:
        """Events being handled."""
        return len(self._flying)

    @property
    def read_ahead(self) -> int:
        """Events taken and not started yet: what a stop gives back at once."""
        return len(self._waiting)

    @property
    def unacknowledged(self) -> int:
        """Events taken and not acknowledged: being handled, read ahead, or handled and waiting to be
        acknowledged with the next read (what a stop that cannot wait leaves to be redelivered)."""
        return len(self._flying) + len(self._waiting) + len(self._to_ack)

    async def run(self) -> Tally:
        delay = 0.1
        while not self._done():
            try:
                await self._step()
                delay = 0.1
            except StoreUnavailableError as exc:
                self.tally.reconnects += 1
                self.report("lost", {"error": str(exc), "retry": delay})
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        if self._waiting:  # read ahead, never started: another consumer takes them now
            ahead, self._waiting = list(self._waiting), deque()
            with contextlib.suppress(StoreUnavailableError):  # else redelivered after the visibility timeout
                self._give_back(ahead)
        if self._runners:
            await asyncio.wait(self._runners)
        await self._flush_until_done()
        return self.tally

    def _done(self) -> bool:
        if self.stopping:
            return True
        return self.max_events is not None and self.tally.handled >= self.max_events

    def _quick(self) -> bool:
        return self._pace is not None and self._pace < QUICK

    async def _step(self) -> None:
        import redis

        now = time.monotonic()
        free = self.concurrency - len(self._runners)
        budget = free + READ_AHEAD - len(self._waiting)  # events still to take (past --max-events never)
        if self.max_events is not None:
            budget = min(budget, self.max_events - self.tally.handled - len(self._flying) - len(self._waiting))
        if (self._flying or self._waiting) and now >= self._next_touch:
            self.group.touch([*self._flying, *(d.id for d in self._waiting)])
            self._next_touch = now + self.group.visibility_ms / 3000
        if free == 0 or (budget <= 0 and not self._waiting):
            # every slot busy: wait for one, but wake to renew the visibility timeouts and to
            # acknowledge what was handled, if no read took that along meanwhile
            if self._to_ack and now >= self._ack_by:
                self._flush()
            wake = min(self._next_touch, self._ack_by) if self._to_ack else self._next_touch
            await asyncio.wait(self._runners, timeout=max(0.0, wake - now), return_when=asyncio.FIRST_COMPLETED)
            return
        # what to take: the free slots' events that are not waiting already, and with a quick handler
        # up to READ_AHEAD more, so that one round trip serves many events
        want = min(budget, free - len(self._waiting) + (READ_AHEAD if self._quick() else 0))
        try:
            taken: list[Delivery] = []
            if now >= self._next_reclaim and want > 0:
                # what was handled goes first: unacknowledged, an event whose handler held the loop
                # past the visibility timeout is overdue, and this worker would take it again
                self._flush()
                taken, dead = self.group.claim(want)
                self.tally.dead_lettered += dead
                # as many as asked for: more may be overdue (a stopped worker's, given back), so look again
                self._next_reclaim = now if len(taken) + dead >= want else now + RECLAIM_EVERY
            count = want - len(taken)
            if len(self._waiting) + len(taken) < free and count > 0:
                # what was handled since the last read is acknowledged along with this one
                taken += self._ack_and_read(count)
            if not taken and not self._runners and not self._waiting and count > 0:
                taken = await self.group.link.slices(lambda s: self.group.read(count, s), RECLAIM_EVERY,
                                                     orphan=self._give_back) or []
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self.group.ensure("0")  # the server lost the group (a restart without persistence)
            return
        if self.stopping:
            self._give_back(taken)
            return
        self._waiting.extend(taken)
        started = min(free, len(self._waiting))
        for _ in range(started):
            runner = asyncio.create_task(self._run_slot())
            self._runners.add(runner)
            runner.add_done_callback(self._runners.discard)
        if not started and self._runners:
            await asyncio.wait(self._runners, timeout=0.05, return_when=asyncio.FIRST_COMPLETED)

    async def _run_slot(self) -> None:
        """One slot: handle the events taken, one at a time, until none is left (or the worker
        stops). A slot takes the next event without a task of its own, so a quick handler's events
        cost no scheduling; a handler that waits lets the other slots take theirs meanwhile."""
        while self._waiting and not self.stopping:
            await self._handle(self._waiting.popleft())
            if time.monotonic() >= self._next_touch:  # a handler that never waits: let the loop renew
                await asyncio.sleep(0)  # the visibility timeouts of the events still waiting

    async def _handle(self, delivery: Delivery) -> None:
        self._flying.add(delivery.id)
        malformed: MalformedEntry | None = None
        try:
            event = envelope_of(self.group.topic, delivery.id, delivery.fields)
        except MalformedEntry as exc:  # never handed to the handler: failed, and dead-lettered at once
            malformed = exc
            event = {"id": delivery.id, "topic": self.group.topic, "type": "malformed", "source": None,
                     "data": None, "timestamp": None, "rootContextId": None, "depth": 0}
        began = time.monotonic()
        try:
            error: Exception | None = None
            details: dict[str, Any] | None = None
            try:
                if malformed is not None:
                    raise malformed
                await self.handler(event)
            except Exception as exc:  # noqa: BLE001 - a handler's failure is reported and retried
                error = exc
                self.tally.failed += 1
                try:
                    outcome = self._set_aside(delivery.id) if malformed is not None else self.group.fail(delivery.id)
                except StoreUnavailableError:
                    outcome = "pending"  # back after the visibility timeout (or dead-lettered then)
                if outcome == "dead":
                    self.tally.dead_lettered += 1
                elif outcome == "released":
                    self._next_reclaim = 0.0  # try it again soon
                details = {"id": delivery.id, "deliveries": delivery.deliveries,
                           "limit": self.group.max_deliveries, "error": exc, "outcome": outcome,
                           "dead_topic": self.group.topic + DEAD_LETTER}
                self.report("failed", details)
            else:
                self.tally.succeeded += 1
                if not self._to_ack:
                    self._ack_by = time.monotonic() + ACK_WITHIN
                self._to_ack.append(delivery.id)
            spent = time.monotonic() - began
            self._pace = spent if self._pace is None else self._pace + (spent - self._pace) * PACE_WEIGHT
            if self.finished is not None:  # before it counts as handled: `run` waits for it so
                await self.finished(event, error, details)
        finally:
            self.tally.handled += 1
            self._flying.discard(delivery.id)

    def _set_aside(self, delivery_id: str) -> str:
        """An entry that is not an event: no retry can make it one, so it is dead-lettered now."""
        return "dead" if self.group.set_aside([delivery_id]) else "gone"

    def _give_back(self, taken: list[Delivery]) -> None:
        self.tally.released += len(self.group.release([(d.id, d.deliveries - 1) for d in taken]))

    def _ack_and_read(self, count: int) -> list[Delivery]:
        import redis

        ids, self._to_ack = self._to_ack, []
        try:
            acked, taken = self.group.ack_and_read(ids, count)
        except StoreUnavailableError:
            self._to_ack = ids + self._to_ack  # acknowledged once the server is back
            raise
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):  # else the group is gone with its pending events
                self._to_ack = ids + self._to_ack
            raise
        self.tally.acked += acked
        return taken

    def _flush(self) -> None:
        import redis

        if not self._to_ack:
            return
        ids, self._to_ack = self._to_ack, []
        try:
            self.tally.acked += self.group.ack(ids)
        except StoreUnavailableError:
            self._to_ack = ids + self._to_ack  # acknowledged once the server is back
            raise
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise  # else the group is gone with its pending events: nothing is left to acknowledge

    async def _flush_until_done(self, patience: float = 30.0) -> None:
        """Acknowledge what was handled, waiting out a short outage (the events are redelivered if not)."""
        deadline, delay = time.monotonic() + patience, 0.1
        while self._to_ack:
            try:
                self._flush()
            except StoreUnavailableError as exc:
                if time.monotonic() + delay > deadline:
                    self.report("lost", {"error": str(exc), "retry": None})
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
