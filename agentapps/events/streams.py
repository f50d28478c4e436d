"""The Redis Streams event backend (`store: redis`): one stream per topic, a consumer group per queue.

Shared by every process of the project, so several processes (and `agentapps worker`s on several
machines) split a queue's events. `event-wait` takes events for good (they are acknowledged as
they are returned); with `ack: false` it peeks: the events are returned but stay first in line for
the next wait (they are held, then released at once, without counting as a delivery). An event a
consumer took but never acknowledged (it crashed) is delivered again after the visibility timeout;
after `maxDeliveries` deliveries it moves to the topic `TOPIC.dead-letter`. An entry that is not an
event agentapps wrote (group.MalformedEntry) goes there at once, as it was, whoever meets it: a
wait (a peek too) returns the events around it and acknowledges nothing before decoding it. A
queue made by `event-subscribe` starts with the events emitted after it (`replay`: the stream's
past ones too); a wait on a queue nobody subscribed sees only the events emitted during the wait.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any, Final

from agentapps.errors import LimitError, UsageError
from agentapps.events.bus import DEFAULT_QUEUE, MAX_DEPTH
from agentapps.events.group import (
    STREAM_LIMIT,
    Delivery,
    Group,
    MalformedEntry,
    consumer_name,
    envelope_of,
    stream_key,
    text_of,
)
from agentapps.events.slots import STREAM_BUS
from agentapps.stores.link import RedisLink

if TYPE_CHECKING:
    from agentapps.context.context import Globals

MAX_TAKE: Final = 1000  # events one wait returns at most when `max` is not given


class StreamBus:
    def __init__(self, link: RedisLink, *, visibility: float, max_deliveries: int) -> None:
        self.link = link
        self.visibility, self.max_deliveries = visibility, max_deliveries
        self.consumer = consumer_name()
        self._groups: dict[tuple[str, str], Group] = {}

    def group(self, topic: str, queue: str | None) -> Group:
        name = queue or DEFAULT_QUEUE
        found = self._groups.get((topic, name))
        if found is None:
            found = self._groups[(topic, name)] = Group(
                self.link, topic, name, self.consumer, visibility=self.visibility,
                max_deliveries=self.max_deliveries)
        return found

    def emit(self, topic: str, type_: str = "event", data: Any = None, *, source: str | None = None,
             root_context_id: str | None = None, depth: int = 0, traceparent: str | None = None) -> dict[str, Any]:
        """Append the event to the topic's stream; its id is the stream entry's id. `traceparent`
        (the emitting call's W3C trace context) is kept with it: a worker's run of it joins that trace."""
        if depth > MAX_DEPTH:
            raise LimitError(
                f"Event '{type_}' on topic '{topic}' is emitted {depth} handlers deep; a handler that emits "
                f"on a topic it handles loops. The limit is {MAX_DEPTH}.")
        body = {"type": type_, "source": source, "data": data, "timestamp": int(time.time() * 1000),
                "rootContextId": root_context_id, "depth": depth}
        if traceparent is not None:
            body["traceparent"] = traceparent
        try:
            text = json.dumps(body, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"Event data for topic '{topic}' is not JSON ({exc}).") from None
        entry = self.link.call(self.link.client.xadd, stream_key(self.link, topic), {"e": text},
                               maxlen=STREAM_LIMIT, approximate=True)
        return {"id": text_of(entry), "topic": topic, **body}

    def subscribe(self, topic: str, *, queue: str | None = None, replay: bool | int = False) -> bool:
        """Create the queue (consumer group); False if it existed (then nothing changes)."""
        start = "$"
        if replay is True:
            start = "0"
        elif replay:
            newest: Any = self.link.call(self.link.client.xrevrange, stream_key(self.link, topic),
                                         count=replay + 1)
            start = text_of(newest[-1][0]) if len(newest) > replay else "0"
        return self.group(topic, queue).ensure(start)

    def unsubscribe(self, topic: str, *, queue: str | None = None) -> int:
        """Remove one queue, or (none named) every queue of the topic; undelivered events go with it."""
        import redis

        key = stream_key(self.link, topic)
        if queue is not None:
            names = [queue]
        else:
            try:
                names = [g["name"].decode("utf-8") for g in self.link.call(self.link.client.xinfo_groups, key)]
            except redis.ResponseError:  # no such stream
                return 0
        removed = 0
        for name in names:
            try:
                removed += int(self.link.call(self.link.client.xgroup_destroy, key, name))
            except redis.ResponseError:
                continue
            self._groups.pop((topic, name), None)
        return removed

    async def wait(self, topic: str, queue: str | None = None, *, timeout: float, ack: bool = True,
                   limit: int | None = None) -> list[dict[str, Any]]:
        """Queued events at once (up to `limit`), else the next one to arrive, else [] after `timeout` s."""
        import redis

        group, count = self.group(topic, queue), limit or MAX_TAKE
        clock = asyncio.get_running_loop()
        deadline = clock.time() + timeout
        try:
            taken, _ = group.take(count)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            return await self._watch(topic, timeout)

        def release(got: list[Any]) -> None:  # taken by a slice whose waiter was cancelled
            group.release([(d.id, d.deliveries - 1) for d in got])

        def read(seconds: float) -> list[Any]:  # the next event, as in memory; overdue ones may become due
            return group.claim(1)[0] or group.read(1, seconds)

        while True:
            events = _settle(group, taken, ack)
            if events:
                return events
            if taken:  # all of them set aside: more may be queued behind them
                taken, _ = group.take(count)
                continue
            left = deadline - clock.time()
            if left <= 0:
                return []
            taken = await self.link.slices(read, left, release) or []

    async def _watch(self, topic: str, timeout: float) -> list[dict[str, Any]]:
        """A wait on a queue nobody subscribed: the next event emitted from now on, taken by nobody.
        An entry that is not an event is passed over (the queues that take it set it aside)."""
        key, client = stream_key(self.link, topic), self.link.client
        newest: Any = self.link.call(client.xrevrange, key, count=1)
        after = newest[0][0] if newest else "0-0"
        clock = asyncio.get_running_loop()
        deadline = clock.time() + timeout

        def read(seconds: float) -> Any:
            return self.link.call(client.xread, {key: after}, count=1, block=max(1, round(seconds * 1000)))

        while (left := deadline - clock.time()) > 0:
            got = await self.link.slices(read, left)
            for _, entries in got or []:
                for entry_id, fields in entries:
                    after = entry_id
                    try:
                        return [envelope_of(topic, text_of(entry_id), fields)]
                    except MalformedEntry:
                        continue
            if not got:
                return []
        return []

    def ack(self, topic: str, queue: str | None, ids: list[str], *, reject: bool = False) -> list[str]:
        """Consume peeked (or otherwise held) events, or with `reject` make them deliverable at once."""
        group = self.group(topic, queue)
        unique = list(dict.fromkeys(ids))
        done = group.release([(i, None) for i in unique]) if reject else group.ack_each(unique)
        missing = [i for i in unique if i not in done]
        if missing:
            raise UsageError(
                f"Event id(s) {', '.join(missing)} are not held on queue '{group.name}' of topic "
                f"'{topic}': they were acknowledged already, or never delivered to that queue.")
        return done


def _settle(group: Group, taken: list[Delivery], ack: bool) -> list[dict[str, Any]]:
    """The events among `taken`, each decoded before anything is acknowledged: entries that are not
    events are set aside (dead-lettered, as they were) first, then the events are taken (`ack`) or
    given back (a peek), so a bad entry never costs a good one, nor blocks a peek."""
    events, bad = [], []
    for delivery in taken:
        try:
            events.append(envelope_of(group.topic, delivery.id, delivery.fields))
        except MalformedEntry:
            bad.append(delivery.id)
    group.set_aside(bad)
    good = [d for d in taken if d.id not in bad]
    if ack:
        group.ack([d.id for d in good])
    else:
        group.release([(d.id, d.deliveries - 1) for d in good])
    return events


def streams_for(g: Globals) -> StreamBus:
    """The process's Redis event backend, made on first use."""
    internals = g.internals
    bus = internals.get(STREAM_BUS)
    if bus is None:
        from agentapps.stores.config import link_for, stores_config

        config = stores_config(g)
        link = link_for(g)
        bus = StreamBus(link, visibility=config.visibility, max_deliveries=config.max_deliveries)
        internals.set(STREAM_BUS, bus)
        link.on_close.append(lambda: internals.set(STREAM_BUS, None))  # made again on the next link
    return bus
