"""One consumer group of one Redis stream, as one consumer sees it: take events (those another
consumer held past the visibility timeout first, then new ones), acknowledge, release, keep alive.

Every method is one or two quick round trips on the calling thread, except `read` with `block`,
which waits on the server (callers run it in the link's threads, see RedisLink.slices).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import dataclass
from typing import Any, Final

from agentapps.events.scripts import ACK, CLAIM, FAIL, RELEASE, SET_ASIDE
from agentapps.stores.link import RedisLink

STREAM_LIMIT: Final = 100_000  # entries kept per topic (approximately); older ones are trimmed
DEAD_LETTER: Final = ".dead-letter"  # topic T's events delivered too often go to T.dead-letter


@dataclass(frozen=True)
class Delivery:
    """One event read from a consumer group, with how often it has been delivered."""

    id: str
    fields: dict[bytes, bytes]
    deliveries: int  # how many times it has been handed out, this time included


def consumer_name() -> str:
    """Unique per process and bus, readable in XINFO: host, pid, random."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


def stream_key(link: RedisLink, topic: str) -> str:
    return link.key("events", topic)


class MalformedEntry(ValueError):
    """A stream entry that is not an event agentapps wrote: no body, a body that is not a JSON object
    with `data`, or a dead-letter note that is not a JSON object. Whoever takes one sets it aside
    (Group.set_aside): it never reaches a handler or a waiter."""


RAW: Final = b"raw:"  # a dead letter keeps its entry's fields other than the body `e` as raw:NAME
MAX_DATA_DEPTH: Final = 62  # a handler gets {event: {data}}: its args may be 64 levels deep (schemas.validation.MAX_DEPTH)
MAX_NESTING: Final = 8  # dead letters of dead letters (of a T.dead-letter consumer's failures) decoded


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON `value` nests deeper than `limit` levels (without recursion)."""
    level = [value]
    for _ in range(limit + 1):
        level = [item for found in level if isinstance(found, (dict, list))
                 for item in (found.values() if isinstance(found, dict) else found)]
        if not level:
            return False
    return True


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


# NaN and Infinity, which Python's json reads, are not JSON: no result could carry them on. One
# decoder for every entry (json.loads with an option builds a new one per call).
_DECODER = json.JSONDecoder(parse_constant=_not_json)


def _object(raw: bytes, what: str) -> dict[str, Any]:
    try:  # bytes decoded as json.loads decodes them (UTF-8, -16 or -32); '{' then a byte other than 0 is UTF-8
        text = (raw if not isinstance(raw, bytes) else raw.decode("utf-8", "surrogatepass")
                if raw[:1] == b"{" and raw[1:2] != b"\x00" else raw.decode(json.detect_encoding(raw), "surrogatepass"))
        found = _DECODER.decode(text)
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict):
        raise MalformedEntry(f"The stream entry's {what} is not a JSON object: not an event agentapps wrote.")
    return found


def envelope_of(topic: str, delivery_id: str, fields: dict[bytes, bytes], nesting: int = 0) -> dict[str, Any]:
    """The public event for a stream entry; a dead-lettered one wraps the event it stands for.
    MalformedEntry when the entry is not one agentapps wrote."""
    note = fields.get(b"dl")
    if note is not None:
        return _dead_letter(topic, delivery_id, fields, _object(note, "dead-letter note"), nesting)
    raw = fields.get(b"e")
    if raw is None:
        raise MalformedEntry("The stream entry has no body (field 'e'): not an event agentapps wrote.")
    body = _object(raw, "body")
    if "data" not in body:
        raise MalformedEntry("The stream entry's body has no 'data': not an event agentapps wrote.")
    if _deeper_than(body["data"], MAX_DATA_DEPTH):  # no handler could take it (the args limit), on any Python
        raise MalformedEntry(f"The stream entry's data is nested deeper than {MAX_DATA_DEPTH} levels: not an event "
                             "agentapps wrote.")
    return {"id": delivery_id, "topic": topic, "type": body.get("type", "event"), "source": body.get("source"),
            "data": body["data"], "timestamp": body.get("timestamp"),
            "rootContextId": body.get("rootContextId"), "depth": body.get("depth", 0),
            **({"traceparent": body["traceparent"]} if isinstance(body.get("traceparent"), str) else {})}


def _dead_letter(topic: str, delivery_id: str, fields: dict[bytes, bytes], note: dict[str, Any],
                 nesting: int) -> dict[str, Any]:
    """`{type: dead-letter, data: {event, group, deliveries, reason}}`; for an entry that was not an
    event, `event` is only its id and topic, and `error` and `raw` (its fields as they were) say why."""
    kept = {name[len(RAW):]: value for name, value in fields.items() if name.startswith(RAW)}
    if b"e" in fields:
        kept[b"e"] = fields[b"e"]
    where: dict[str, Any] = {"id": note.get("id"), "topic": note.get("topic")}
    data: dict[str, Any] = {"event": where, "group": note.get("group"), "deliveries": note.get("deliveries"),
                            "reason": note.get("reason", "deliveries")}
    original: dict[str, Any] = {}
    try:
        if nesting >= MAX_NESTING:
            raise MalformedEntry(f"The stream entry is a dead letter nested more than {MAX_NESTING} deep.")
        original = data["event"] = envelope_of(where["topic"], where["id"], kept, nesting + 1)
    except MalformedEntry as exc:
        data.update(reason="malformed", error=str(exc),
                    raw={_shown(name): _shown(value) for name, value in kept.items()})
        if note.get("omitted"):
            data["omitted"] = note["omitted"]  # fields beyond the ones a dead letter keeps
    return {"id": delivery_id, "topic": topic, "type": "dead-letter", "source": note.get("group"), "data": data,
            "timestamp": original.get("timestamp", _entry_time(delivery_id)),
            "rootContextId": original.get("rootContextId"), "depth": original.get("depth", 0)}


def _shown(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _entry_time(entry_id: Any) -> int | None:
    """The milliseconds in a stream entry id (`1732608000000-0`)."""
    head = entry_id.split("-", 1)[0] if isinstance(entry_id, str) else ""
    return int(head) if head.isdigit() else None


def text_of(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class Group:
    """Consumer `consumer` of group `name` on `topic`'s stream."""

    def __init__(self, link: RedisLink, topic: str, name: str, consumer: str, *, visibility: float,
                 max_deliveries: int) -> None:
        self.link, self.topic, self.name, self.consumer = link, topic, name, consumer
        self.key = stream_key(link, topic)
        self.dead_key = stream_key(link, topic + DEAD_LETTER)
        self.visibility_ms = max(1, round(visibility * 1000))
        self.max_deliveries = max_deliveries
        self._claim, self._ack, self._release = link.script(CLAIM), link.script(ACK), link.script(RELEASE)
        self._fail, self._set_aside = link.script(FAIL), link.script(SET_ASIDE)

    def ensure(self, start: str = "0") -> bool:
        """Create the group (and the stream) if missing, reading from `start`; False if it existed."""
        import redis

        try:
            self.link.call(self.link.client.xgroup_create, self.key, self.name, id=start, mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" in str(exc):
                return False
            raise
        return True

    def claim(self, count: int) -> tuple[list[Delivery], int]:
        """Events held past the visibility timeout by any consumer, now ours; and how many went to
        the dead-letter topic instead."""
        claimed, dead = self.link.call(self._claim, [self.key, self.dead_key], self.name, self.consumer,
                                       self.visibility_ms, count, self.max_deliveries, self.topic, STREAM_LIMIT)
        return [Delivery(text_of(i), _fields(f), int(n)) for i, f, n in claimed], int(dead)

    def read(self, count: int, block: float | None = None) -> list[Delivery]:
        """New events (never delivered to this group), waiting up to `block` seconds for one."""
        got: Any = self.link.call(self.link.client.xreadgroup, self.name, self.consumer, {self.key: ">"},
                                  count=count, block=None if block is None else max(1, round(block * 1000)))
        return [Delivery(text_of(i), _fields(f), 1) for _, entries in got or [] for i, f in entries]

    def take(self, count: int) -> tuple[list[Delivery], int]:
        """Up to `count` events without waiting: overdue ones first, then new ones."""
        taken, dead = self.claim(count)
        if len(taken) < count:
            taken += self.read(count - len(taken))
        return taken, dead

    def ack(self, ids: list[str]) -> int:
        return int(self.link.call(self.link.client.xack, self.key, self.name, *ids)) if ids else 0

    def ack_and_read(self, ids: list[str], count: int) -> tuple[int, list[Delivery]]:
        """Acknowledge `ids` and read up to `count` new events in one round trip (a pipeline: the
        worker acknowledges what it handled with its next read); the first error either met is raised."""
        if not ids:
            return 0, self.read(count)
        pipe = self.link.client.pipeline(transaction=False)
        pipe.xack(self.key, self.name, *ids)
        pipe.xreadgroup(self.name, self.consumer, {self.key: ">"}, count=count)

        def both() -> tuple[int, Any]:
            acked, got = pipe.execute(raise_on_error=False)
            for found in (acked, got):
                if isinstance(found, BaseException):
                    raise found
            return int(acked), got

        acked, got = self.link.call(both)
        return acked, [Delivery(text_of(i), _fields(f), 1) for _, entries in got or [] for i, f in entries]

    def ack_each(self, ids: list[str]) -> list[str]:
        """Acknowledge each id; the ones that were pending (the rest were not)."""
        return [text_of(i) for i in self.link.call(self._ack, [self.key], self.name, *ids)]

    def release(self, deliveries: list[tuple[str, int | None]]) -> list[str]:
        """Make pending events deliverable again now; a count sets their delivery count (None keeps it)."""
        if not deliveries:
            return []
        pairs = [x for i, n in deliveries for x in (i, "" if n is None else n)]
        found = self.link.call(self._release, [self.key], self.name, self.consumer, self.visibility_ms, *pairs)
        return [text_of(i) for i in found]

    def fail(self, delivery_id: str) -> str:
        """A handler failed on an event we hold: 'dead' if that was its last allowed try (it is in the
        dead-letter topic now), 'released' if it is deliverable again, 'gone' if we no longer held it."""
        outcome, _ = self.link.call(self._fail, [self.key, self.dead_key], self.name, self.consumer,
                                    self.visibility_ms, delivery_id, self.max_deliveries, self.topic,
                                    STREAM_LIMIT)
        return text_of(outcome)

    def set_aside(self, ids: list[str]) -> list[str]:
        """Move entries we hold that are not events (MalformedEntry) to the dead-letter topic at once,
        as they were, with reason 'malformed'; the ids moved (the rest we no longer held)."""
        if not ids:
            return []
        moved = self.link.call(self._set_aside, [self.key, self.dead_key], self.name, self.consumer, self.topic,
                               STREAM_LIMIT, *ids)
        return [text_of(i) for i in moved]

    def touch(self, ids: list[str]) -> None:
        """Restart the visibility timeout of events still being handled (without counting a delivery)."""
        if ids:
            self.link.call(self.link.client.xclaim, self.key, self.name, self.consumer, 0, ids, justid=True)

    def leave(self) -> None:
        """Remove this consumer from the group when it holds nothing (a clean exit)."""
        import redis

        try:
            pending = self.link.call(self.link.client.xpending_range, self.key, self.name, "-", "+", 1,
                                     consumername=self.consumer)
            if not pending:
                self.link.call(self.link.client.xgroup_delconsumer, self.key, self.name, self.consumer)
        except redis.ResponseError:
            pass  # the group is gone already


def _fields(raw: Any) -> dict[bytes, bytes]:
    if isinstance(raw, dict):
        return raw
    items = list(raw or [])
    return {items[i]: items[i + 1] for i in range(0, len(items), 2)}
