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
"""

from __future__ import annotations

import asyncio
import time
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


@dataclass
class Tally:
    """The counts a worker reports when it stops."""

    handled: int = 0  # handler runs that ended (succeeded + failed)
    succeeded: int = 0
    failed: int = 0
    acked: int = 0  # acknowledgements the server confirmed
    dead_lettered: int = 0  # events this worker moved to the dead-letter topic
    released: int = 0  # events taken while stopping and given back at once
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
        self._flying: dict[str, asyncio.Task[None]] = {}
        self._to_ack: list[str] = []
        self._next_reclaim = 0.0
        self._next_touch = time.monotonic()

    def stop(self) -> None:
        self.stopping = True

    @property
    def in_flight(self) -> int:
        return len(self._flying)

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
        if self._flying:
            await asyncio.wait(list(self._flying.values()))
        await self._flush_until_done()
        return self.tally

    def _done(self) -> bool:
        if self.stopping:
            return True
        return self.max_events is not None and self.tally.handled >= self.max_events

    def _room(self) -> int:
        room = self.concurrency - len(self._flying)
        if self.max_events is not None:
            room = min(room, self.max_events - self.tally.handled - len(self._flying))
        return max(room, 0)

    async def _step(self) -> None:
        import redis

        self._flush()
        now = time.monotonic()
        room = self._room()
        if self._flying and now >= self._next_touch:
            self.group.touch(list(self._flying))
            self._next_touch = now + self.group.visibility_ms / 3000
        if room == 0:  # every slot busy: wait for one, but wake to renew the visibility timeouts
            await asyncio.wait(list(self._flying.values()), timeout=max(0.0, self._next_touch - now),
                               return_when=asyncio.FIRST_COMPLETED)
            return
        try:
            taken: list[Delivery] = []
            if now >= self._next_reclaim:
                taken, dead = self.group.claim(room)
                self.tally.dead_lettered += dead
                self._next_reclaim = now + RECLAIM_EVERY
            if len(taken) < room:
                taken += self.group.read(room - len(taken))
            if not taken and not self._flying:
                taken = await self.group.link.slices(lambda s: self.group.read(room, s), RECLAIM_EVERY,
                                                     orphan=self._give_back) or []
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self.group.ensure("0")  # the server lost the group (a restart without persistence)
            return
        if self.stopping:
            self._give_back(taken)
            return
        for delivery in taken:
            self._flying[delivery.id] = asyncio.create_task(self._handle(delivery))
        if not taken and self._flying:
            await asyncio.wait(list(self._flying.values()), timeout=0.05, return_when=asyncio.FIRST_COMPLETED)

    async def _handle(self, delivery: Delivery) -> None:
        malformed: MalformedEntry | None = None
        try:
            event = envelope_of(self.group.topic, delivery.id, delivery.fields)
        except MalformedEntry as exc:  # never handed to the handler: failed, and dead-lettered at once
            malformed = exc
            event = {"id": delivery.id, "topic": self.group.topic, "type": "malformed", "source": None,
                     "data": None, "timestamp": None, "rootContextId": None, "depth": 0}
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
                self._to_ack.append(delivery.id)
            if self.finished is not None:  # before it counts as handled: `run` waits for it so
                await self.finished(event, error, details)
        finally:
            self.tally.handled += 1
            self._flying.pop(delivery.id, None)

    def _set_aside(self, delivery_id: str) -> str:
        """An entry that is not an event: no retry can make it one, so it is dead-lettered now."""
        return "dead" if self.group.set_aside([delivery_id]) else "gone"

    def _give_back(self, taken: list[Delivery]) -> None:
        self.tally.released += len(self.group.release([(d.id, d.deliveries - 1) for d in taken]))

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
