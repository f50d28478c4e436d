"""The event-* skills: ordering, consumer groups, replay, manual ack, handler refs, timeouts."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentapps.context.context import Context
from agentapps.context.manager import invoke_root
from agentapps.events.bus import REPLAY_LIMIT, bus_for

RECORDER = '''
"""recorder: an event handler that appends `tag:type:data` to the memory-state key `log`."""
from agentapps.errors import ConflictError

frontmatter = {"name": "recorder", "metadata": {"params": {"type": "object", "properties": {
    "event": {"type": "object"}, "tag": {"type": "string"}},
    "required": ["event"], "additionalProperties": False}}}

async def run(ctx, args):
    event = args["event"]
    entry = f"{args.get('tag', '-')}:{event['type']}:{event['data']}"
    while True:
        log = await ctx.manager.invoke("state-get", {"key": "log", "store": "memory"})
        try:
            await ctx.manager.invoke("state-set", {"key": "log", "value": (log or []) + [entry],
                                                   "expect": log, "store": "memory"})
            return None
        except ConflictError:
            continue
'''

BROKEN = '''
frontmatter = {"name": "broken", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    raise RuntimeError("handler exploded")
'''

DRIVER = '''
"""driver: subscribes `recorder`, emits three events, waits for the log, returns it."""
import asyncio

frontmatter = {"name": "driver"}

async def run(ctx, args):
    await ctx.manager.invoke("event-subscribe", {"topic": "jobs", "ref": "recorder", "args": {"tag": "r"}})
    await ctx.manager.invoke("event-subscribe", {"topic": "jobs", "ref": "broken"})
    first = await ctx.manager.invoke("event-emit", {"topic": "jobs", "type": "start", "data": 1})
    for n in (2, 3):
        await ctx.manager.invoke("event-emit", {"topic": "jobs", "type": "step", "data": n})
    for _ in range(200):
        log = await ctx.manager.invoke("state-get", {"key": "log", "store": "memory"})
        if log and len(log) == 3:
            return {"log": log, "source": first["source"]}
        await asyncio.sleep(0.01)
    return {"log": log}
'''

Scenario = Callable[[Context], Awaitable[Any]]


def run(project: Any, scenario: Scenario) -> Any:
    root = project.boot()
    return asyncio.run(scenario(root))


async def call(root: Context, skill: str, /, **args: Any) -> Any:
    return await invoke_root(root, skill, args)


async def emit(root: Context, topic: str, *data: Any) -> list[str]:
    return [(await call(root, "event-emit", topic=topic, type="t", data=d))["id"] for d in data]


def datas(events: list[dict[str, Any]]) -> list[Any]:
    return [e["data"] for e in events]


def test_events_arrive_in_emission_order_with_the_full_envelope(project):
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="t")
        before = int(time.time() * 1000)
        ids = await emit(root, "t", *range(5))
        return before, ids, await call(root, "event-wait", topic="t", timeout=1000)

    before, ids, events = run(project, scenario)
    assert datas(events) == [0, 1, 2, 3, 4]
    assert [e["id"] for e in events] == ids
    for event in events:
        assert set(event) == {"id", "topic", "type", "source", "data", "timestamp", "rootContextId", "depth"}
        assert re.fullmatch(r"[0-9a-f]{8}", event["id"]) and event["topic"] == "t" and event["type"] == "t"
        assert event["timestamp"] >= before and isinstance(event["rootContextId"], str)
    assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)


def test_each_consumer_group_gets_every_event(project):
    async def scenario(root: Context) -> Any:
        for queue in ("audit", "billing"):
            await call(root, "event-subscribe", topic="orders", queue=queue)
        await emit(root, "orders", "a", "b", "c")
        audit = await call(root, "event-wait", topic="orders", queue="audit", timeout=1000)
        billing = await call(root, "event-wait", topic="orders", queue="billing", timeout=1000)
        default = await call(root, "event-wait", topic="orders", timeout=0)
        return datas(audit), datas(billing), default

    assert run(project, scenario) == (["a", "b", "c"], ["a", "b", "c"], [])


def test_consumers_sharing_a_group_split_its_events(project):
    async def scenario(root: Context) -> Any:
        waiters = [asyncio.create_task(call(root, "event-wait", topic="jobs", queue="workers", timeout=5000))
                   for _ in range(2)]
        await asyncio.sleep(0.05)
        await emit(root, "jobs", "j1", "j2")
        got = [datas(await w) for w in waiters]
        await call(root, "event-subscribe", topic="jobs", queue="workers")
        await emit(root, "jobs", "j3", "j4", "j5", "j6")
        first = await call(root, "event-wait", topic="jobs", queue="workers", max=2, timeout=1000)
        second = await call(root, "event-wait", topic="jobs", queue="workers", max=3, timeout=1000)
        return got, datas(first), datas(second)

    got, first, second = run(project, scenario)
    assert sorted(got) == [["j1"], ["j2"]]
    assert (first, second) == (["j3", "j4"], ["j5", "j6"])


def test_without_subscribe_only_events_during_the_wait_are_seen(project):
    async def scenario(root: Context) -> Any:
        await emit(root, "t", "missed")
        waiting = asyncio.create_task(call(root, "event-wait", topic="t", timeout=5000))
        await asyncio.sleep(0.05)
        await emit(root, "t", "seen")
        seen = await waiting
        await emit(root, "t", "missed-again")
        return datas(seen), await call(root, "event-wait", topic="t", timeout=0)

    assert run(project, scenario) == (["seen"], [])


def test_replay_delivers_buffered_events_to_a_new_subscription(project):
    async def scenario(root: Context) -> Any:
        await emit(root, "log", *range(REPLAY_LIMIT + 20))
        await call(root, "event-subscribe", topic="log", queue="all", replay=True)
        await call(root, "event-subscribe", topic="log", queue="last2", replay=2)
        await call(root, "event-subscribe", topic="log", queue="none")
        return [datas(await call(root, "event-wait", topic="log", queue=q, timeout=0))
                for q in ("all", "last2", "none")]

    everything, last2, none = run(project, scenario)
    assert everything == list(range(20, REPLAY_LIMIT + 20))
    assert (last2, none) == ([REPLAY_LIMIT + 18, REPLAY_LIMIT + 19], [])


def test_subscribe_is_idempotent(project):
    async def scenario(root: Context) -> Any:
        created = [(await call(root, "event-subscribe", topic="t"))["created"] for _ in range(2)]
        handlers = [(await call(root, "event-subscribe", topic="t", ref="recorder"))["created"] for _ in range(2)]
        await emit(root, "t", "once")
        await bus_for(root.globals).settle()
        log = await call(root, "state-get", key="log", store="memory")
        return created, handlers, datas(await call(root, "event-wait", topic="t", timeout=0)), log

    project.write("recorder.skill.py", RECORDER)
    assert run(project, scenario) == ([True, False], [True, False], ["once"], ["-:t:once"])


def test_handler_refs_run_through_the_pipeline_in_order(project):
    project.write("recorder.skill.py", RECORDER)

    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="jobs", ref="recorder", args={"tag": "a"})
        await call(root, "event-subscribe", topic="jobs", ref="./recorder.skill.py", args={"bogus": 1})
        await emit(root, "jobs", 1, 2)
        await bus_for(root.globals).settle()
        return await call(root, "state-get", key="log", store="memory")

    assert run(project, scenario) == ["a:t:1", "a:t:2"]  # the bogus args failed validate-args


def test_a_failing_handler_is_logged_and_never_reaches_the_emitter(project, caplog):
    project.write("broken.skill.py", BROKEN)

    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="t", ref="broken")
        emitted = await call(root, "event-emit", topic="t", data=1)
        await bus_for(root.globals).settle()
        return emitted

    with caplog.at_level(logging.WARNING, logger="agentapps.events"):
        assert run(project, scenario)["data"] == 1
    assert "event handler 'broken' for topic 't' failed" in caplog.text
    assert "handler exploded" in caplog.text


def test_handlers_and_failures_through_the_cli(project):
    project.write("recorder.skill.py", RECORDER)
    project.write("broken.skill.py", BROKEN)
    project.write("driver.skill.py", DRIVER)
    result = project.cli("run", "driver")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"log": ["r:start:1", "r:step:2", "r:step:3"], "source": "driver"}
    assert result.stderr.count("event handler 'broken' for topic 'jobs' failed") == 3
    assert "Traceback" not in result.stderr


SUBSCRIBER = """
frontmatter = {{"name": "{name}", "allowed-tools": "{allowed}"}}

async def run(ctx, args):
    return await ctx.manager.invoke("event-subscribe", {{"topic": "t", "ref": "{ref}"}})
"""


def test_which_handlers_a_skill_may_subscribe_is_an_argument_constraint(project, caplog):
    project.write("recorder.skill.py", RECORDER)
    project.write("other.skill.py", RECORDER.replace('"recorder"', '"other"'))
    project.write("plain.skill.py", SUBSCRIBER.format(name="plain", allowed="event-subscribe", ref="recorder"))
    project.write("narrow.skill.py", SUBSCRIBER.format(name="narrow", allowed="event-subscribe(ref=rec*)",
                                                        ref="other"))
    project.write("fits.skill.py", SUBSCRIBER.format(name="fits", allowed="event-subscribe(ref=rec*)",
                                                      ref="recorder"))
    denied = project.cli("run", "narrow")
    assert denied.returncode == 3
    assert "Skill 'narrow' may not call 'event-subscribe': argument 'ref' does not match 'rec*'" in denied.stderr

    async def scenario(root: Context, subscriber: str) -> Any:
        await call(root, subscriber)
        await emit(root, "t", 1)
        await bus_for(root.globals).settle()
        return await call(root, "state-get", key="log", store="memory")

    # the handler runs under its own allowed-tools (none declared: it may use state-set)
    assert asyncio.run(scenario(project.boot(), "plain")) == ["-:t:1"]
    assert asyncio.run(scenario(project.boot(), "fits")) == ["-:t:1"]


def test_subscribing_an_unknown_skill_fails_at_once(project):
    result = project.cli("run", "event-subscribe", "--topic", "t", "--ref", "recordr")
    assert result.returncode == 2 and "Unknown skill 'recordr'" in result.stderr


def test_unsubscribe_removes_handlers_and_queues(project):
    project.write("recorder.skill.py", RECORDER)

    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="t", queue="a")
        await call(root, "event-subscribe", topic="t", queue="b")
        await emit(root, "t", 0)
        await call(root, "event-subscribe", topic="t", ref="recorder")
        removed = [await call(root, "event-unsubscribe", topic="t", ref="recorder"),
                   await call(root, "event-unsubscribe", topic="t", queue="a")]
        await emit(root, "t", 1)
        await bus_for(root.globals).settle()
        log = await call(root, "state-get", key="log", store="memory")
        a = await call(root, "event-wait", topic="t", queue="a", timeout=0)
        b = await call(root, "event-wait", topic="t", queue="b", timeout=0)
        everything = await call(root, "event-unsubscribe", topic="t")
        return removed, log, a, datas(b), everything

    removed, log, a, b, everything = run(project, scenario)
    assert removed == [{"removed": 1}, {"removed": 1}]
    assert (log, a, b, everything) == (None, [], [0, 1], {"removed": 1})


def test_wait_times_out_with_an_empty_list(project):
    async def scenario(root: Context) -> Any:
        started = time.monotonic()
        events = await call(root, "event-wait", topic="quiet", timeout=200)
        return events, time.monotonic() - started, bus_for(root.globals).topics["quiet"].queues

    events, elapsed, queues = run(project, scenario)
    assert events == [] and 0.2 <= elapsed < 2
    assert queues == {}, "a bare wait leaves no queue behind"
    result = project.cli("run", "event-wait", "--topic", "t", "--timeout", "100")
    assert (result.returncode, result.stdout) == (0, "[]\n")


def test_a_cancelled_waiter_gives_its_event_back(project):
    async def scenario(root: Context) -> Any:
        await call(root, "event-subscribe", topic="t")
        waiter = asyncio.create_task(call(root, "event-wait", topic="t", timeout=5000))
        await asyncio.sleep(0.05)
        await emit(root, "t", "kept")
        waiter.cancel()  # cancelled after the event was handed over, before it could return
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return datas(await call(root, "event-wait", topic="t", timeout=0))

    assert run(project, scenario) == ["kept"]


def test_function_handlers_get_a_copy_of_each_event(project):
    async def scenario(root: Context) -> Any:
        seen: list[Any] = []

        async def meddle(event: dict[str, Any]) -> None:
            event["data"]["n"] += 100

        bus = bus_for(root.globals)
        assert bus.subscribe("t", fn=meddle) and bus.subscribe("t", fn=lambda e: seen.append(e["data"]))
        await call(root, "event-subscribe", topic="t")
        await call(root, "event-emit", topic="t", data={"n": 1})
        await bus.settle()
        return seen, datas(await call(root, "event-wait", topic="t", timeout=0))

    assert run(project, scenario) == ([{"n": 1}], [{"n": 1}])


def test_a_handler_that_re_emits_on_its_own_topic_is_stopped(project):
    project.write("echo-handler.skill.py", '''
        frontmatter = {"name": "echo-handler", "allowed-tools": "event-emit state-set",
                       "metadata": {"params": {"type": "object"}}}

        async def run(ctx, args):
            depth = args["event"]["depth"]
            await ctx.manager.invoke("state-set", {"key": "deepest", "value": depth, "store": "memory"})
            await ctx.manager.invoke("event-emit", {"topic": "loop", "data": depth})
        ''')
    project.write("start.skill.py", '''
        import asyncio
        frontmatter = {"name": "start"}

        async def run(ctx, args):
            await ctx.manager.invoke("event-subscribe", {"topic": "loop", "ref": "echo-handler"})
            await ctx.manager.invoke("event-emit", {"topic": "loop"})
            for _ in range(200):
                await asyncio.sleep(0.01)
            return await ctx.manager.invoke("state-get", {"key": "deepest", "store": "memory"})
        ''')
    result = project.cli("run", "start")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "16"
    assert "handlers deep" in result.stderr
