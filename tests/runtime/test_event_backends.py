"""The event skills' contract on both backends (memory and Redis Streams), the seed's peek
(`ack: false`) and millisecond timeouts, and what only a shared store has: redelivery after the
visibility timeout and the dead-letter topic."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentapps.context.context import Context
from agentapps.context.manager import invoke_root
from agentapps.errors import UsageError
from tests.support.redis_server import URL, drop_namespace, main_skill, namespace, require_server

ID = {"memory": r"[0-9a-f]{8}", "redis": r"\d+-\d+"}


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest, project: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The project's events on this backend."""
    if request.param == "memory":
        yield "memory"
    else:
        yield from _on_redis(project, monkeypatch)


@pytest.fixture
def on_redis(project: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from _on_redis(project, monkeypatch)


def _on_redis(project: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Events on Redis, with a visibility timeout of 300 ms and 2 deliveries at most."""
    require_server()
    name = namespace()
    project.write("main.skill.md", main_skill(name, "{events: redis, visibilityTimeout: 300, maxDeliveries: 2}"))
    monkeypatch.setenv("AGENTAPPS_REDIS_URL", URL)
    try:
        yield "redis"
    finally:
        drop_namespace(name)


def run(project: Any, scenario: Any) -> Any:
    root = project.boot()
    return asyncio.run(asyncio.wait_for(scenario(root), 20))  # a wait in seconds, not ms, fails here


async def call(root: Context, skill: str, /, **args: Any) -> Any:
    return await invoke_root(root, skill, args)


async def emit(root: Context, topic: str, *data: Any) -> list[str]:
    return [(await call(root, "event-emit", topic=topic, type="t", data=d))["id"] for d in data]


def datas(events: list[dict[str, Any]]) -> list[Any]:
    return [e["data"] for e in events]


def test_events_arrive_in_order_with_the_full_envelope(project, backend):
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="t")
        ids = await emit(root, "t", *range(5))
        return ids, await call(root, "event-wait", topic="t", timeout=1000)

    ids, events = run(project, scenario)
    assert datas(events) == [0, 1, 2, 3, 4] and [e["id"] for e in events] == ids
    for event in events:
        assert set(event) == {"id", "topic", "type", "source", "data", "timestamp", "rootContextId", "depth"}
        assert re.fullmatch(ID[backend], event["id"]) and event["topic"] == "t" and event["type"] == "t"


def test_every_queue_gets_every_event_and_consumers_of_one_queue_split_them(project, backend):
    async def scenario(root: Context) -> Any:
        for queue in ("audit", "workers"):
            await call(root, "event-subscribe", topic="jobs", queue=queue)
        waiters = [asyncio.create_task(call(root, "event-wait", topic="jobs", queue="workers", timeout=5000))
                   for _ in range(2)]
        await asyncio.sleep(0.3)
        await emit(root, "jobs", "j1", "j2")
        split = [datas(await w) for w in waiters]
        audit = await call(root, "event-wait", topic="jobs", queue="audit", timeout=1000)
        return split, datas(audit)

    split, audit = run(project, scenario)
    assert sorted(e for got in split for e in got) == ["j1", "j2"] and all(split)
    assert audit == ["j1", "j2"]


def test_a_wait_without_subscribe_sees_only_events_emitted_during_it(project, backend):
    async def scenario(root: Context) -> Any:
        await emit(root, "t", "missed")
        waiting = asyncio.create_task(call(root, "event-wait", topic="t", timeout=5000))
        await asyncio.sleep(0.3)
        await emit(root, "t", "seen")
        return datas(await waiting)

    assert run(project, scenario) == ["seen"]


def test_ack_false_peeks_and_the_events_stay_for_the_next_wait(project, backend):
    """The seed: `ack: false` is peek without consuming; event-ack consumes what was peeked."""
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="q")
        ids = await emit(root, "q", "e1", "e2", "e3")
        peeked = await call(root, "event-wait", topic="q", ack=False, max=2, timeout=1000)
        again = await call(root, "event-wait", topic="q", ack=False, timeout=1000)
        kept = await call(root, "event-ack", topic="q", ids=[ids[0]], reject=True)
        consumed = await call(root, "event-ack", topic="q", ids=[ids[0]])
        with pytest.raises(UsageError, match="not held on queue 'default' of topic 'q'"):
            await call(root, "event-ack", topic="q", ids=[ids[0]])
        taken = await call(root, "event-wait", topic="q", timeout=1000)
        rest = await call(root, "event-wait", topic="q", ack=False, timeout=0)
        return datas(peeked), datas(again), kept, consumed, datas(taken), rest, ids

    peeked, again, kept, consumed, taken, rest, ids = run(project, scenario)
    assert peeked == ["e1", "e2"] and again == ["e1", "e2", "e3"]
    assert kept == {"requeued": [ids[0]]} and consumed == {"acked": [ids[0]]}
    assert taken == ["e2", "e3"] and rest == []


def test_a_waiting_peek_sees_the_next_event_and_leaves_it_queued(project, backend):
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="w")
        peeking = asyncio.create_task(call(root, "event-wait", topic="w", ack=False, timeout=5000))
        await asyncio.sleep(0.3)
        await emit(root, "w", "x")
        seen = await peeking
        return datas(seen), datas(await call(root, "event-wait", topic="w", timeout=1000))

    assert run(project, scenario) == (["x"], ["x"])


def test_timeouts_are_milliseconds_as_the_seed_writes_them(project, backend):
    async def scenario(root: Context) -> Any:
        started = time.monotonic()
        events = await call(root, "event-wait", topic="quiet", timeout=300)
        return events, time.monotonic() - started

    events, took = run(project, scenario)
    assert events == [] and 0.25 <= took < 5


def test_replay_delivers_past_events_to_a_new_queue(project, backend):
    async def scenario(root: Context) -> Any:
        await emit(root, "log", *range(6))
        await call(root, "event-subscribe", topic="log", queue="all", replay=True)
        await call(root, "event-subscribe", topic="log", queue="last2", replay=2)
        await call(root, "event-subscribe", topic="log", queue="none")
        return [datas(await call(root, "event-wait", topic="log", queue=q, timeout=0))
                for q in ("all", "last2", "none")]

    assert run(project, scenario) == [[0, 1, 2, 3, 4, 5], [4, 5], []]


def test_subscribe_is_idempotent_and_unsubscribe_drops_the_queue(project, backend):
    async def scenario(root: Context) -> Any:
        created = [(await call(root, "event-subscribe", topic="t", queue="a"))["created"] for _ in range(2)]
        await emit(root, "t", 1)
        removed = await call(root, "event-unsubscribe", topic="t", queue="a")
        return created, removed

    assert run(project, scenario) == ([True, False], {"removed": 1})


# --- Redis only: a shared store's guarantees -------------------------------------------------

def test_an_event_taken_and_never_acknowledged_comes_back_after_the_visibility_timeout(project, on_redis):
    async def scenario(root: Context) -> Any:
        from agentapps.events.group import Group

        await call(root, "event-subscribe", topic="jobs", queue="w")
        await emit(root, "jobs", "j1")
        from agentapps.events.streams import streams_for

        bus = streams_for(root.globals)
        crashed = Group(bus.link, "jobs", "w", "crashed-consumer", visibility=0.3, max_deliveries=2)
        assert [d.deliveries for d in crashed.take(10)[0]] == [1]  # taken, then the consumer "dies"
        early = await call(root, "event-wait", topic="jobs", queue="w", timeout=0)
        started = time.monotonic()
        late = await call(root, "event-wait", topic="jobs", queue="w", timeout=3000)
        return early, datas(late), time.monotonic() - started

    early, late, waited = run(project, scenario)
    assert early == [] and late == ["j1"] and waited < 2


def test_an_event_delivered_too_often_goes_to_the_dead_letter_topic(project, on_redis):
    async def scenario(root: Context) -> Any:
        from agentapps.events.group import Group
        from agentapps.events.streams import streams_for

        await call(root, "event-subscribe", topic="jobs", queue="w")
        [event_id] = await emit(root, "jobs", "poison")
        bus = streams_for(root.globals)
        crashing = Group(bus.link, "jobs", "w", "crashing", visibility=0.3, max_deliveries=2)
        counts = []
        for _ in range(2):  # delivered twice, acknowledged never
            await asyncio.sleep(0.35)
            counts += [d.deliveries for d in crashing.take(10)[0]]
        await asyncio.sleep(0.35)
        after = await call(root, "event-wait", topic="jobs", queue="w", timeout=0)
        dead = await call(root, "event-wait", topic="jobs.dead-letter", timeout=0)
        return counts, after, dead, event_id

    counts, after, dead, event_id = run(project, scenario)
    assert counts == [1, 2] and after == []
    assert [d["type"] for d in dead] == ["dead-letter"]
    assert dead[0]["data"]["event"]["id"] == event_id and dead[0]["data"]["event"]["data"] == "poison"
    assert dead[0]["data"]["deliveries"] == 2 and dead[0]["data"]["group"] == "w"


def test_a_failed_try_releases_the_event_and_the_last_allowed_one_dead_letters_it_at_once(project, on_redis):
    async def scenario(root: Context) -> Any:
        from agentapps.events.group import Group
        from agentapps.events.streams import streams_for

        await call(root, "event-subscribe", topic="jobs", queue="w")
        await emit(root, "jobs", "poison")
        bus = streams_for(root.globals)
        worker = Group(bus.link, "jobs", "w", "worker", visibility=30, max_deliveries=2)
        [first], _ = worker.take(1)
        outcomes = [worker.fail(first.id)]  # released: due again at once, no visibility wait
        [second], _ = worker.take(1)
        other = Group(bus.link, "jobs", "w", "other", visibility=30, max_deliveries=2)
        outcomes.append(other.fail(second.id))  # not the holder: left alone
        outcomes.append(worker.fail(second.id))  # the second (last) try: dead-lettered by this call
        outcomes.append(worker.fail(second.id))  # already settled
        left = await call(root, "event-wait", topic="jobs", queue="w", timeout=0)
        dead = await call(root, "event-wait", topic="jobs.dead-letter", timeout=0)
        return [first.deliveries, second.deliveries], outcomes, left, dead

    deliveries, outcomes, left, dead = run(project, scenario)
    assert deliveries == [1, 2] and outcomes == ["released", "gone", "dead", "gone"]
    assert left == [] and datas([d["data"]["event"] for d in dead]) == ["poison"]
    assert dead[0]["data"]["deliveries"] == 2


def test_an_agents_events_go_to_the_projects_events_store(project, backend):
    """With `stores: {events: redis}` the agent's seed-named events are on Redis, where event-wait
    (in this process or another) reads them; they used to go to the in-process bus only."""
    project.write("t.json", '{"turns": [{"text": "Trying.", "code": "return await ctx.manager.invoke('
                            "'file-read', {path: 'missing.txt'})\"}, {\"text\": \"Done.\"}]}")

    async def scenario(root: Context) -> list[str]:
        await call(root, "event-subscribe", topic="progress")
        await call(root, "agent", prompt="Do it.", userMessage="go", events="progress",
                   config={"agent": "agent-scripted", "script": "t.json"})
        return [e["type"] for e in await call(root, "event-wait", topic="progress", timeout=200, max=50)]

    assert run(project, scenario) == ["agent-start", "turn-start", "agent-message", "tool-call", "tool-error",
                                      "turn-end", "turn-start", "agent-message", "turn-end", "agent-complete"]
