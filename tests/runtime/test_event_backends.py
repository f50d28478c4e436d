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
        # (a visibility long enough that a loaded machine still looks before it runs out)
        crashed = Group(bus.link, "jobs", "w", "crashed-consumer", visibility=1.0, max_deliveries=2)
        assert [d.deliveries for d in crashed.take(10)[0]] == [1]  # taken, then the consumer "dies"
        early = await call(root, "event-wait", topic="jobs", queue="w", timeout=0)
        started = time.monotonic()
        late = await call(root, "event-wait", topic="jobs", queue="w", timeout=4000)
        return early, datas(late), time.monotonic() - started

    early, late, waited = run(project, scenario)
    assert early == [] and late == ["j1"] and waited < 3


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


# --- Redis only: stream entries agentapps did not write (issue 26: nothing lost, nothing leaked) ---

def raw_stream(root: Context, topic: str) -> tuple[Any, str]:
    """The Redis client and the stream key of `topic`, to add entries as another program would."""
    from agentapps.events.streams import streams_for

    link = streams_for(root.globals).link
    return link.client, link.key("events", topic)


@pytest.mark.attack("worker poison entries")
def test_an_event_that_is_not_json_never_enters_a_queue_and_costs_the_others_nothing(project, backend):
    """In memory the only way in is event-emit, whose args are checked: a value that could not be
    read back (NaN, a set) is refused there, so no malformed entry is ever queued. On Redis, entries
    written by other means are set aside as the tests below show."""
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="q")
        first = await emit(root, "q", "e1")
        refused = []
        for bad in (float("nan"), {1, 2}, {"deep": float("inf")}):
            try:
                await emit(root, "q", bad)
            except UsageError as exc:
                refused.append(str(exc))
        last = await emit(root, "q", "e2")
        got = await call(root, "event-wait", topic="q", max=10, timeout=0)
        return got, first + last, refused

    got, ids, refused = run(project, scenario)
    assert [e["id"] for e in got] == ids and datas(got) == ["e1", "e2"]
    assert len(refused) == 3 and all("event-emit" in message for message in refused), refused


def test_a_malformed_entry_in_a_batch_costs_none_of_the_valid_events(project, on_redis):
    """The wait used to acknowledge the batch before decoding it: it failed on the bad entry and the
    valid events of the batch were acknowledged, never seen, never delivered again."""
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="q")
        client, key = raw_stream(root, "q")
        first = await emit(root, "q", "e1")
        bad = [client.xadd(key, {"e": "garbage"}).decode(), client.xadd(key, {"x": "no body"}).decode(),
               client.xadd(key, {"e": '{"type": "no data"}'}).decode()]
        last = await emit(root, "q", "e2")
        got = await call(root, "event-wait", topic="q", timeout=0)
        again = await call(root, "event-wait", topic="q", timeout=0)
        dead = await call(root, "event-wait", topic="q.dead-letter", timeout=0)
        return got, again, dead, first + last, bad, client.xpending(key, "default")["pending"]

    got, again, dead, ids, bad, held = run(project, scenario)
    assert [e["id"] for e in got] == ids and datas(got) == ["e1", "e2"] and again == [] and held == 0
    assert [d["data"]["event"] for d in dead] == [{"id": i, "topic": "q"} for i in bad]
    assert [d["data"]["raw"] for d in dead] == [{"e": "garbage"}, {"x": "no body"}, {"e": '{"type": "no data"}'}]
    assert {d["data"]["reason"] for d in dead} == {"malformed"} and all(d["type"] == "dead-letter" for d in dead)
    assert "not a JSON object" in dead[0]["data"]["error"] and "no body" in dead[1]["data"]["error"]
    assert dead[0]["data"]["group"] == "default" and dead[0]["data"]["deliveries"] == 1


@pytest.mark.attack("worker poison entries")
def test_a_peek_is_not_blocked_by_a_malformed_entry(project, on_redis):
    """With ack: false the bad entry used to stay first in line and fail every peek."""
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="p")
        client, key = raw_stream(root, "p")
        bad = client.xadd(key, {"e": "garbage"}).decode()
        await emit(root, "p", "e1")
        peeks = [datas(await call(root, "event-wait", topic="p", ack=False, timeout=0)) for _ in range(2)]
        taken = await call(root, "event-wait", topic="p", timeout=0)
        dead = await call(root, "event-wait", topic="p.dead-letter", timeout=0)
        return peeks, datas(taken), dead, bad

    peeks, taken, dead, bad = run(project, scenario)
    assert peeks == [["e1"], ["e1"]] and taken == ["e1"]
    assert [(d["data"]["event"]["id"], d["data"]["reason"], d["data"]["raw"]) for d in dead] == [
        (bad, "malformed", {"e": "garbage"})]


@pytest.mark.attack("worker poison entries")
def test_a_wait_for_the_next_event_passes_over_malformed_entries(project, on_redis):
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="w")
        client, key = raw_stream(root, "w")
        _, unsubscribed = raw_stream(root, "u")
        waits = [asyncio.create_task(call(root, "event-wait", topic=t, timeout=5000)) for t in ("w", "u")]
        await asyncio.sleep(0.3)
        client.xadd(key, {"e": "garbage"})
        client.xadd(unsubscribed, {"e": "garbage"})
        await asyncio.sleep(0.3)
        await emit(root, "w", "next")
        await emit(root, "u", "next")
        return [datas(await w) for w in waits]

    assert run(project, scenario) == [["next"], ["next"]]


@pytest.mark.attack("worker poison entries")
def test_dead_letters_of_malformed_entries_are_listed_with_their_raw_content(project, on_redis):
    """Dead-lettering used to copy a poison body into T.dead-letter as it was, and listing the dead
    letters (event-wait, which acknowledged before decoding) then failed and lost 10 of 10."""
    async def scenario(root: Context) -> Any:
        from agentapps.events.group import Group
        from agentapps.events.streams import streams_for

        await call(root, "event-subscribe", topic="jobs", queue="w")
        client, key = raw_stream(root, "jobs")
        bodies: list[dict[str, Any]] = [{"e": f"garbage {n}"} for n in range(8)]
        bodies += [{"e": b"\xff\xfe not utf-8"}, {"e": '{"data": 1}', "dl": "not a note"}]
        for fields in bodies:
            client.xadd(key, fields)
        # taken by a consumer whose handler fails on its last allowed try (what a worker did)
        holder = Group(streams_for(root.globals).link, "jobs", "w", "holder", visibility=30, max_deliveries=1)
        outcomes = [holder.fail(d.id) for d in holder.take(100)[0]]
        # a dead letter as the old code wrote it: the poison body as is, a note without a reason
        _, dead_key = raw_stream(root, "jobs.dead-letter")
        client.xadd(dead_key, {"e": "old garbage", "dl": '{"topic": "jobs", "group": "w", "deliveries": 5, '
                                                          '"id": "1-1"}'})
        client.xadd(dead_key, {"e": "not even a dead letter"})
        dead = await call(root, "event-wait", topic="jobs.dead-letter", timeout=0)
        deeper = await call(root, "event-wait", topic="jobs.dead-letter.dead-letter", timeout=0)
        return outcomes, dead, deeper

    outcomes, dead, deeper = run(project, scenario)
    assert outcomes == ["dead"] * 10 and len(dead) == 11
    assert {(d["type"], d["data"]["reason"], d["data"]["group"]) for d in dead} == {("dead-letter", "malformed", "w")}
    assert [d["data"]["raw"] for d in dead[:8]] == [{"e": f"garbage {n}"} for n in range(8)]
    assert dead[8]["data"]["raw"] == {"e": "\\xff\\xfe not utf-8"}
    assert dead[9]["data"]["raw"] == {"e": '{"data": 1}', "dl": "not a note"}
    assert dead[10]["data"]["raw"] == {"e": "old garbage"} and dead[10]["data"]["event"] == {"id": "1-1", "topic": "jobs"}
    assert [d["data"]["raw"] for d in deeper] == [{"e": "not even a dead letter"}]


@pytest.mark.attack("worker poison entries")
def test_an_entry_with_thousands_of_fields_is_set_aside_without_wedging_the_queue(project, on_redis):
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="big")
        client, key = raw_stream(root, "big")
        client.xadd(key, {f"f{n}": "v" for n in range(5000)})
        await emit(root, "big", "after")
        got = await call(root, "event-wait", topic="big", timeout=0)
        dead = await call(root, "event-wait", topic="big.dead-letter", timeout=0)
        return datas(got), dead

    got, [letter] = run(project, scenario)
    assert got == ["after"] and len(letter["data"]["raw"]) == 1000 and letter["data"]["omitted"] == 4000
