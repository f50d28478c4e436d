"""The in-process event bus (in the `EVENT_BUS` slot of a run's internals): topics, queues, replay, peek, handlers.

A wait with `ack: false` peeks: it returns events without taking them, so they stay first in line
for the next wait (of this or another consumer of the queue) until a wait takes them or event-ack
consumes them. The Redis backend (streams.py) behaves the same across processes.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.core.logs import logger
from agentapps.errors import LimitError, UsageError
from agentapps.events.slots import EVENT_BUS
from agentapps.types import Event

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals

REPLAY_LIMIT = 100
MAX_DEPTH = 16  # events emitted from handlers of events emitted from handlers of ...
DEFAULT_QUEUE = "default"
EventFn = Callable[[dict[str, Any]], Any]
log = logger("agentapps.events")


def envelope(event: Event) -> dict[str, Any]:
    """The public form of an event, a fresh copy for each receiver."""
    found = {"id": event.id, "topic": event.topic, "type": event.type, "source": event.source,
             "data": copy.deepcopy(event.data), "timestamp": event.timestamp,
             "rootContextId": event.root_context_id, "depth": event.depth}
    if event.traceparent is not None:  # only when the emitting run was traced
        found["traceparent"] = event.traceparent
    return found


@dataclass
class _Waiter:
    """A pending event-wait: the future the next matching event resolves."""

    future: asyncio.Future[Event]
    ack: bool  # False: a peek, which sees the event but leaves it queued


@dataclass
class EventQueue:
    """One consumer group: gets every event of its topic once; its waiters split those events.

    `durable` queues come from subscribe; a queue made by a bare wait lives only while it is used.
    """

    name: str
    durable: bool = True
    ready: deque[Event] = field(default_factory=deque)
    waiters: deque[_Waiter] = field(default_factory=deque)

    def push(self, event: Event) -> bool:
        """Show `event` to every waiting peek and hand it to the longest-waiting consumer that takes
        it; False if nobody took it (then it must be queued)."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.future.done():
                waiter.future.set_result(event)
                if waiter.ack:
                    return True
        return False

    def put(self, event: Event) -> None:
        if not self.push(event):
            self.ready.append(event)

    def requeue(self, events: Iterable[Event]) -> None:
        """Put events back at the front, in their original order."""
        rest = [e for e in events if not self.push(e)]
        self.ready.extendleft(reversed(rest))

    def take(self, limit: int | None, ack: bool) -> list[Event]:
        count = len(self.ready) if limit is None else min(limit, len(self.ready))
        if not ack:
            return [self.ready[i] for i in range(count)]
        return [self.ready.popleft() for _ in range(count)]

    @property
    def idle(self) -> bool:
        return not (self.durable or self.ready or self.waiters)


@dataclass
class _Handler:
    """A subscription that runs a skill (or a function) for each event of a topic."""

    ref: str | None
    fn: EventFn | None
    args: dict[str, Any]
    ctx: Context | None


@dataclass
class _Topic:
    """A topic's subscribers' queues, its handlers and its replay buffer."""

    queues: dict[str, EventQueue] = field(default_factory=dict)
    handlers: list[_Handler] = field(default_factory=list)
    buffer: deque[Event] = field(default_factory=lambda: deque(maxlen=REPLAY_LIMIT))


class EventBus:
    def __init__(self, redact: Callable[[str], str] | None = None) -> None:
        self.topics: dict[str, _Topic] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.redact = redact or (lambda text: text)  # a handler's error may quote a secret

    def _topic(self, name: str) -> _Topic:
        return self.topics.setdefault(name, _Topic())

    def emit(self, topic: str, type_: str = "event", data: Any = None, *, source: str | None = None,
             root_context_id: str | None = None, depth: int = 0, traceparent: str | None = None) -> dict[str, Any]:
        """Fill every queue of `topic` now, then schedule its handlers; return the envelope
        (`traceparent`: the emitting call's trace context, kept with the event)."""
        if depth > MAX_DEPTH:
            raise LimitError(
                f"Event '{type_}' on topic '{topic}' is emitted {depth} handlers deep; a handler that emits "
                f"on a topic it handles loops. The limit is {MAX_DEPTH}.")
        event = Event(uuid.uuid4().hex[:8], topic, type_, int(time.time() * 1000), source, data,
                      root_context_id, depth, traceparent)
        t = self._topic(topic)
        t.buffer.append(event)
        for queue in list(t.queues.values()):
            queue.put(event)
        for handler in list(t.handlers):
            self._fire(handler, event)
        return envelope(event)

    def subscribe(self, topic: str, *, queue: str | None = None, ref: str | None = None,
                  fn: EventFn | None = None, args: dict[str, Any] | None = None,
                  ctx: Context | None = None, replay: bool | int = False) -> bool:
        """Add a queue (no ref/fn) or a handler; False if it already existed (then nothing changes)."""
        t = self._topic(topic)
        backlog = _replayed(t.buffer, replay)
        if ref is None and fn is None:
            name = queue or DEFAULT_QUEUE
            existing = t.queues.get(name)
            if existing is not None and existing.durable:
                return False
            if existing is None:
                existing = t.queues[name] = EventQueue(name)
            existing.durable = True
            for event in backlog:
                existing.put(event)
            return True
        if any(h.ref == ref and h.fn is fn for h in t.handlers):
            return False
        handler = _Handler(ref, fn, dict(args or {}), ctx)
        t.handlers.append(handler)
        for event in backlog:
            self._fire(handler, event)
        return True

    def unsubscribe(self, topic: str, *, ref: str | None = None, queue: str | None = None,
                    fn: EventFn | None = None) -> int:
        """Remove one handler, one queue, or (neither named) every subscription of `topic`."""
        t = self.topics.get(topic)
        if t is None:
            return 0
        everything = ref is None and fn is None and queue is None
        before = len(t.handlers)
        t.handlers = [h for h in t.handlers
                      if not (everything or (ref is not None and h.ref == ref) or (fn is not None and h.fn is fn))]
        removed = before - len(t.handlers)
        for name in [n for n in t.queues if everything or n == queue]:
            q = t.queues[name]
            removed += q.durable
            q.durable = False
            q.ready.clear()  # undelivered events go with the queue
            self._forget_if_idle(topic, name)
        return removed

    async def wait(self, topic: str, queue: str | None = None, *, timeout: float, ack: bool = True,
                   limit: int | None = None) -> list[dict[str, Any]]:
        """Drain up to `limit` queued events at once, else wait for one; [] when `timeout` passes."""
        name = queue or DEFAULT_QUEUE
        q = self._topic(topic).queues.setdefault(name, EventQueue(name, durable=False))
        try:
            events = q.take(limit, ack)
            if not events and timeout > 0:
                events = await _await_one(q, ack, timeout)
            return [envelope(e) for e in events]
        finally:
            self._forget_if_idle(topic, name)

    def ack(self, topic: str, queue: str | None, ids: list[str], *, reject: bool = False) -> list[str]:
        """Consume queued events a peek (`ack: false`) showed; with `reject`, leave them first in line."""
        name = queue or DEFAULT_QUEUE
        q = self.topics[topic].queues.get(name) if topic in self.topics else None
        held = {e.id for e in q.ready} if q is not None else set()
        missing = [i for i in dict.fromkeys(ids) if i not in held]
        if q is None or missing:
            raise UsageError(
                f"Event id(s) {', '.join(missing)} are not held on queue '{name}' of topic "
                f"'{topic}': they were acknowledged already, or never delivered to that queue.")
        wanted = set(ids)
        settled = [e.id for e in q.ready if e.id in wanted]  # queue order, not `ids` order
        if not reject:
            q.ready = deque(e for e in q.ready if e.id not in wanted)
        self._forget_if_idle(topic, name)
        return settled

    async def settle(self) -> None:
        """Wait until every handler scheduled so far (and any they schedule) has finished."""
        while self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)

    def _forget_if_idle(self, topic: str, name: str) -> None:
        t = self.topics.get(topic)
        if t is not None and name in t.queues and t.queues[name].idle:
            del t.queues[name]

    def _fire(self, handler: _Handler, event: Event) -> None:
        task = asyncio.get_running_loop().create_task(_run_handler(handler, envelope(event), self.redact))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


def bus_for(g: Globals) -> EventBus:
    """The process's bus, created on first use."""
    bus = g.internals.get(EVENT_BUS)
    if not isinstance(bus, EventBus):
        bus = EventBus(g.internals.redactor.redact)
        g.internals.set(EVENT_BUS, bus)
    return bus


def _replayed(buffer: deque[Event], replay: bool | int) -> list[Event]:
    if replay is True:
        return list(buffer)
    if replay is False or replay <= 0:
        return []
    return list(buffer)[-replay:]


async def _await_one(q: EventQueue, ack: bool, timeout: float) -> list[Event]:
    waiter = _Waiter(asyncio.get_running_loop().create_future(), ack)
    q.waiters.append(waiter)
    try:
        await asyncio.wait({waiter.future}, timeout=timeout)
    except asyncio.CancelledError:
        if waiter.future.done() and ack:  # taken just as we were cancelled: give it back
            q.requeue([waiter.future.result()])
        raise
    finally:
        if waiter in q.waiters:
            q.waiters.remove(waiter)
        if not waiter.future.done():
            waiter.future.cancel()
    return [waiter.future.result()] if not waiter.future.cancelled() else []


async def _run_handler(handler: _Handler, env: dict[str, Any], redact: Callable[[str], str]) -> None:
    # A tool ref runs from the subscriber's context: with its permissions, never the emitter's.
    try:
        if handler.fn is not None:
            value = handler.fn(env)
            if inspect.isawaitable(value):
                await value
        elif handler.ctx is not None and handler.ref is not None:
            args = {k: v for k, v in handler.args.items() if not str(k).startswith("$")}  # data only
            await handler.ctx.manager.invoke(handler.ref, {**args, "event": env})
    except Exception as exc:  # noqa: BLE001 - a handler's failure must not reach the emitter
        who = handler.ref or getattr(handler.fn, "__qualname__", "function")
        text = " ".join(str(exc).split()) or type(exc).__name__
        log.warning("%s", redact(f"event handler '{who}' for topic '{env['topic']}' failed: {text}"))
