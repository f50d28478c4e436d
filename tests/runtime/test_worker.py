"""`agentapps worker` as a user runs it against a real Redis server (real processes; a worker that
stops after --max-events runs in the test's process), handlers run through the pipeline,
acknowledgement, redelivery, dead letters, signals, crashes and restarts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.redis_server import PrivateRedis, RedisProject

RECORD = '''
"""record: append `pid id` to handled.txt; data {sleep} appends it to started.txt and sleeps first,
"poison" fails."""
import os
import time

frontmatter = {"name": "record", "metadata": {"params": {"type": "object", "properties": {
    "event": {"type": "object"}}, "required": ["event"], "additionalProperties": False}}}


def run(ctx, args):
    event = args["event"]
    data = event["data"]
    if isinstance(data, dict) and data.get("sleep"):
        with open(os.path.join(str(ctx.globals.config.project), "started.txt"), "a") as out:
            out.write(f"{os.getpid()} {event['id']}\\n")
        time.sleep(data["sleep"])
    if data == "poison":
        raise RuntimeError("poison event")
    with open(os.path.join(str(ctx.globals.config.project), "handled.txt"), "a") as out:
        out.write(f"{os.getpid()} {event['id']}\\n")
'''


@pytest.fixture
def jobs(redis_project: RedisProject) -> RedisProject:
    redis_project.project.write("record.skill.py", RECORD)
    return redis_project


def emit(rp: RedisProject, topic: str, items: list[Any], url: str | None = None) -> list[str]:
    """Emit events straight through the Redis backend (in this process)."""
    from agentapps.events.streams import streams_for

    before = os.environ.get("AGENTAPPS_REDIS_URL")
    os.environ["AGENTAPPS_REDIS_URL"] = url or rp.url
    try:
        bus = streams_for(rp.project.boot().globals)
        return [bus.emit(topic, "job", item)["id"] for item in items]
    finally:
        os.environ["AGENTAPPS_REDIS_URL"] = before or rp.url


def handled(rp: RedisProject, log: str = "handled.txt") -> list[tuple[int, str]]:
    path = rp.root / log
    if not path.exists():
        return []
    return [(int(pid), event_id) for pid, event_id in (line.split()[:2] for line in path.read_text().splitlines())]


def started(rp: RedisProject) -> list[str]:
    """The ids of the sleeping events a handler has begun (in started.txt)."""
    return [event_id for _, event_id in handled(rp, "started.txt")]


def pending(rp: RedisProject, topic: str, group: str, url: str | None = None) -> int:
    import redis

    client = redis.Redis.from_url(url or rp.url)
    return int(client.xpending(f"agentapps:{rp.namespace}:events:{topic}", group)["pending"])


def start(rp: RedisProject, *args: str, url: str | None = None, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentapps", "worker", *args], cwd=rp.root,
                            env=rp.project.env(AGENTAPPS_REDIS_URL=url or rp.url, **env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the workers")
        time.sleep(0.05)


def test_a_worker_handles_the_backlog_acknowledges_and_prints_a_summary(jobs):
    ids = emit(jobs, "jobs", list(range(20)))
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "20", "--json",
                      timeout=60)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["handled"] == summary["succeeded"] == summary["acked"] == 20
    assert summary["stoppedBy"] == "max-events" and summary["handler"] == "record"
    assert sorted(event_id for _, event_id in handled(jobs)) == sorted(ids)
    assert pending(jobs, "jobs", "g") == 0
    assert "worker jobs/g: 20 handled (20 ok, 0 failed)" in result.stderr


def test_a_failing_event_is_retried_then_dead_lettered_and_the_rest_go_on(jobs):
    emit(jobs, "jobs", ["a", "poison", "b"])
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "5",
                      "--max-deliveries", "3", "--json", timeout=60)
    summary = json.loads(result.stdout)
    assert result.returncode == 0 and summary["succeeded"] == 2 and summary["failed"] == 3
    assert result.stderr.count("failed (delivery") == 3 and "poison event" in result.stderr
    dead = jobs.cli("run", "event-wait", "--topic", "jobs.dead-letter", "--timeout", "2000")
    [letter] = json.loads(dead.stdout)
    assert letter["data"]["event"]["data"] == "poison" and letter["data"]["deliveries"] == 3
    assert pending(jobs, "jobs", "g") == 0


@pytest.mark.attack("worker poison entries")
def test_a_stream_entry_agentapps_did_not_write_is_dead_lettered_and_never_wedges_the_worker(jobs):
    # anyone who can write the stream (another job) can add entries whose body is not an event:
    # such an entry used to kill its handling task before it was counted, so the worker held the
    # slot forever and handled nothing after it (and the next consumer to reclaim it did the same)
    import redis

    client = redis.Redis.from_url(jobs.url)
    key = f"agentapps:{jobs.namespace}:events:jobs"
    first = emit(jobs, "jobs", ["a"])
    for fields in ({"e": "not json"}, {"e": "[1, 2]"}, {"e": "[" * 100_000 + "]" * 100_000},
                   {"e": json.dumps({"data": "x"}), "dl": "garbage"}):
        client.xadd(key, fields)
    last = emit(jobs, "jobs", ["b"])
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "6",
                      "--max-deliveries", "1", "--json", timeout=30)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["handled"] == 6 and summary["succeeded"] == 2 and summary["deadLettered"] == 4
    assert sorted(event_id for _, event_id in handled(jobs)) == sorted(first + last)
    assert result.stderr.count("MalformedEntry") == 4 and "Traceback" not in result.stderr
    assert pending(jobs, "jobs", "g") == 0


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_finishes_the_events_in_flight_and_acknowledges_them(jobs, sig, code):
    ids = emit(jobs, "jobs", [{"sleep": 1.0}, {"sleep": 1.0}, "later"])
    worker = start(jobs, "jobs", "--group", "g", "--handler", "record", "--concurrency", "2", "--json")
    try:
        # both slow events are in flight (a fixed 0.7 s was not always enough for a loaded machine
        # to start the worker and both handlers)
        wait_for(lambda: sorted(started(jobs)) == sorted(ids[:2]))
        worker.send_signal(sig)
        out, err = worker.communicate(timeout=20)
    finally:
        worker.kill()
        worker.communicate()
    assert worker.returncode == code, err
    summary = json.loads(out)
    assert summary["succeeded"] == summary["acked"] == 2 and summary["stoppedBy"] == signal.Signals(sig).name, err
    assert sorted(i for _, i in handled(jobs)) == sorted(ids[:2])
    assert pending(jobs, "jobs", "g") == 0
    rest = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "1", timeout=60)
    assert rest.returncode == 0 and handled(jobs)[-1][1] == ids[2]


def test_a_second_signal_exits_at_once_and_still_prints_the_json_summary(jobs):
    ids = emit(jobs, "jobs", [{"sleep": 3.0}, "later"])
    worker = start(jobs, "jobs", "--group", "g", "--handler", "record", "--json")
    try:
        wait_for(lambda: started(jobs) == ids[:1])  # the slow event is in flight
        worker.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # two signals, not one: the first is taken before the second comes
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=20)
    finally:
        worker.kill()
        worker.communicate()
    assert worker.returncode == 143 and "SIGTERM again" in err, err
    summary = json.loads(out)
    assert summary["ok"] is False and summary["stoppedBy"] == "SIGTERM" and summary["abandoned"] == 1
    assert summary["acked"] == 0 and pending(jobs, "jobs", "g") == 1  # redelivered to the next worker
    rest = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "2",
                    "--visibility-timeout", "0.5", timeout=60)
    assert rest.returncode == 0, rest.stderr
    assert sorted(i for _, i in handled(jobs)) == sorted(ids)  # the abandoned one too


def test_a_quick_handler_s_worker_stopped_by_a_signal_loses_and_repeats_nothing_it_read_ahead(jobs):
    # a quick handler lets the worker take events beyond its free slots in one read; whatever a stop
    # finds read ahead (how many depends on the moment) is given back at once, not left for the
    # visibility timeout (the in-process test below stops it with events read ahead, every time)
    ids = emit(jobs, "jobs", [{"sleep": 0.0002}] * 3000)
    slow_to_come_back = ("--visibility-timeout", "600")  # what is not given back waits 10 minutes
    worker = start(jobs, "jobs", "--group", "g", "--handler", "record", *slow_to_come_back, "--json")
    try:
        wait_for(lambda: len(handled(jobs)) >= 100)
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    finally:
        worker.kill()
        worker.communicate()
    assert worker.returncode == 143, err
    summary = json.loads(out)
    assert summary["handled"] == summary["succeeded"] == summary["acked"] < len(ids), err
    assert pending(jobs, "jobs", "g") == summary["released"]  # what is pending was given back
    rest = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", *slow_to_come_back, "--max-events",
                    str(len(ids) - summary["handled"]), "--json", timeout=120)
    assert rest.returncode == 0, rest.stderr
    assert sorted(i for _, i in handled(jobs)) == sorted(ids)  # each once: none lost, none repeated


@contextlib.contextmanager
def consumers(rp: RedisProject, visibility: float) -> Iterator[Callable[..., Any]]:
    """Workers of group `g` of topic `jobs` run in this process: `make(handler, **limits)`."""
    from agentapps.events.consumer import Worker
    from agentapps.events.group import Group, consumer_name
    from agentapps.secrets import Redactor
    from agentapps.stores.link import RedisLink

    link = RedisLink(rp.url, rp.namespace, Redactor())
    link.connect()

    def make(handler: Any, **limits: Any) -> Worker:
        group = Group(link, "jobs", "g", consumer_name(), visibility=visibility, max_deliveries=5)
        group.ensure("0")
        return Worker(group, handler, **limits)

    try:
        yield make
    finally:
        link.close()


def test_a_stopped_worker_gives_back_at_once_the_events_it_read_ahead(jobs):
    ids = emit(jobs, "jobs", list(range(300)))
    seen: list[str] = []
    held, go_on = asyncio.Event(), asyncio.Event()

    async def quick(event: dict[str, Any]) -> None:
        seen.append(event["id"])
        if first.read_ahead and not held.is_set():  # hold one event while others wait read ahead
            held.set()
            await go_on.wait()

    async def stop_while_held() -> tuple[int, Any]:
        running = asyncio.create_task(first.run())
        await asyncio.wait_for(held.wait(), 30)
        ahead = first.read_ahead
        first.stop()
        go_on.set()
        return ahead, await running

    with consumers(jobs, visibility=600) as make:  # what is not given back waits 10 minutes
        first = make(quick)
        ahead, tally = asyncio.run(stop_while_held())
        assert ahead > 0 and tally.released == ahead  # every event read ahead, given back
        assert tally.handled == tally.acked == len(seen) < len(ids)
        assert pending(jobs, "jobs", "g") == ahead
        # deliverable now, though their visibility timeout is 10 minutes: another consumer takes them at once
        second = make(quick, max_events=len(ids) - len(seen))
        assert asyncio.run(asyncio.wait_for(second.run(), 30)).handled == len(ids) - tally.handled
        assert sorted(seen) == sorted(ids)  # each once
        assert pending(jobs, "jobs", "g") == 0


def test_an_event_handled_past_its_visibility_timeout_is_not_taken_again_by_the_same_worker(jobs):
    # a handler that holds the loop past the visibility timeout leaves no time to renew it, so the
    # event is overdue when its handler returns; it is acknowledged before the worker next looks for
    # overdue events (seen in CI: it was taken again, counted twice, and the next event never ran)
    ids = emit(jobs, "jobs", ["slow", "later"])
    seen: list[str] = []

    async def blocking(event: dict[str, Any]) -> None:
        seen.append(event["id"])
        if event["data"] == "slow":
            time.sleep(0.8)  # noqa: ASYNC251 - as a sync skill does: the loop waits with it

    with consumers(jobs, visibility=0.3) as make:
        tally = asyncio.run(asyncio.wait_for(make(blocking, max_events=2).run(), 30))
    assert seen == ids and tally.handled == tally.acked == 2
    assert pending(jobs, "jobs", "g") == 0


def test_a_worker_with_max_events_takes_no_more_than_it_handles(jobs):
    ids = emit(jobs, "jobs", list(range(300)))
    first = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "100", "--json",
                     timeout=60)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["handled"] == summary["acked"] == 100 and summary["released"] == 0
    assert pending(jobs, "jobs", "g") == 0
    rest = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "200", "--json",
                    timeout=60)
    assert rest.returncode == 0 and json.loads(rest.stdout)["released"] == 0, rest.stderr
    assert [i for _, i in handled(jobs)] == ids  # in order, each once


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_nothing_and_repeats_only_what_it_never_acknowledged(jobs):
    ids = emit(jobs, "jobs", [{"sleep": 0.005}] * 300)
    common = ("jobs", "--group", "g", "--handler", "record", "--concurrency", "2", "--visibility-timeout", "0.5",
              "--json")
    victim, survivor = start(jobs, *common), start(jobs, *common)
    try:
        for proc in (victim, survivor):
            assert proc.stderr is not None and proc.stderr.readline().startswith("worker jobs/g:")
        wait_for(lambda: len(handled(jobs)) >= 60)
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=10)
        wait_for(lambda: len({i for _, i in handled(jobs)}) == len(ids))
        wait_for(lambda: pending(jobs, "jobs", "g") == 0)
        survivor.send_signal(signal.SIGTERM)
        out, err = survivor.communicate(timeout=20)
    finally:
        for proc in (victim, survivor):
            proc.kill()
            proc.communicate()
    assert survivor.returncode == 143, err
    runs = handled(jobs)
    counts = Counter(i for _, i in runs)
    repeated = {i for i, n in counts.items() if n > 1}
    assert set(counts) == set(ids)
    by_victim = {i for pid, i in runs if pid == victim.pid}
    assert repeated <= by_victim  # only events the killed worker had taken come twice
    assert len(repeated) <= 2 * 2  # at most its in-flight events and its not yet acknowledged ones
    assert json.loads(out)["acked"] == len([1 for pid, _ in runs if pid == survivor.pid])


@pytest.mark.slow
def test_a_redis_restart_mid_run_loses_nothing_acknowledged(jobs, tmp_path):
    server = PrivateRedis(tmp_path / "redis").start()
    try:
        ids = emit(jobs, "jobs", [{"sleep": 0.01}] * 200, url=server.url)
        common = ("jobs", "--group", "g", "--handler", "record", "--concurrency", "2", "--json")
        workers = [start(jobs, *common, url=server.url) for _ in range(2)]
        try:
            for worker in workers:  # connected: losing the server now is a restart, not a failed start
                assert worker.stderr is not None and worker.stderr.readline().startswith("worker jobs/g:")
            wait_for(lambda: len(handled(jobs)) >= 40)
            server.kill()
            time.sleep(1.0)
            server.start()
            wait_for(lambda: len({i for _, i in handled(jobs)}) == len(ids), timeout=60)
            wait_for(lambda: pending(jobs, "jobs", "g", url=server.url) == 0)
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            outputs = [worker.communicate(timeout=30) for worker in workers]
        finally:
            for worker in workers:
                worker.kill()
                worker.communicate()
        summaries = [json.loads(out) for out, _ in outputs]
        assert [w.returncode for w in workers] == [143, 143], [err for _, err in outputs]
        assert sum(s["reconnects"] for s in summaries) > 0, "the restart was never noticed"
        assert sum(s["acked"] for s in summaries) == len(ids)  # each event acknowledged exactly once
        runs = handled(jobs)
        assert {i for _, i in runs} == set(ids)
        # a repeat is only ever an event whose acknowledgement the restart swallowed
        assert len(runs) - len(ids) == sum(s["succeeded"] - s["acked"] for s in summaries)
    finally:
        server.stop()


SLOW = '''
"""slow: an async handler that takes longer than the visibility timeout, then records `pid id`."""
import asyncio
import os

frontmatter = {"name": "slow", "metadata": {"params": {"type": "object", "properties": {
    "event": {"type": "object"}}, "required": ["event"]}}}


async def run(ctx, args):
    await asyncio.sleep(1.5)
    with open(os.path.join(str(ctx.globals.config.project), "handled.txt"), "a") as out:
        out.write(f"{os.getpid()} {args['event']['id']}\\n")
'''


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_a_handler_slower_than_the_visibility_timeout_keeps_its_event(jobs, concurrency):
    """Renewal also while every slot is busy (--concurrency 1 holding one event): the other worker,
    idle and claiming overdue events, must not take the event the first one is still handling."""
    jobs.project.write("slow.skill.py", SLOW)
    [event_id] = emit(jobs, "jobs", ["one"])
    common = ("jobs", "--group", "g", "--handler", "slow", "--concurrency", concurrency,
              "--visibility-timeout", "0.3", "--json")
    procs = [start(jobs, *common)]
    try:
        assert procs[0].stderr is not None and procs[0].stderr.readline().startswith("worker jobs/g:")
        wait_for(lambda: pending(jobs, "jobs", "g") == 1)  # the first worker holds the event
        procs.append(start(jobs, *common))
        assert procs[1].stderr is not None and procs[1].stderr.readline().startswith("worker jobs/g:")
        wait_for(lambda: handled(jobs) != [])
        time.sleep(1.0)  # time for the second worker to have finished a wrongly claimed copy too
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        outputs = [proc.communicate(timeout=30) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()
    first = procs[0]
    assert handled(jobs) == [(first.pid, event_id)], outputs
    assert [json.loads(out)["handled"] for out, _ in outputs] == [1, 0]


def test_an_unreachable_server_is_one_line_and_exit_2_without_the_password(jobs):
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record",
                      AGENTAPPS_REDIS_URL="redis://:top-secret-pw@127.0.0.1:1/0", real_process=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "127.0.0.1:1" in result.stderr
    assert "top-secret-pw" not in result.stderr + result.stdout


@pytest.mark.parametrize(("handler", "message"), [
    ("no-such-skill", "Unknown skill 'no-such-skill'"),
    ("hello", "takes no `event` argument"),
])
def test_a_handler_that_cannot_take_events_is_refused_at_start(jobs, handler, message):
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", handler, real_process=True)
    assert result.returncode == 2 and message in result.stderr


def test_the_redis_store_needs_a_project_name_never_a_path(project, redis_url):
    result = project.cli("run", "state-get", "--key", "k", "--store", "redis", AGENTAPPS_REDIS_URL=redis_url)
    assert result.returncode == 2 and "needs the project's name" in result.stderr


@pytest.mark.slow
def test_a_worker_recreates_its_group_when_a_restart_without_persistence_lost_everything(jobs, tmp_path):
    server = PrivateRedis(tmp_path / "redis", "--appendonly", "no").start()
    try:
        worker = start(jobs, "jobs", "--group", "g", "--handler", "record", "--max-events", "3", "--json",
                       url=server.url)
        try:
            assert worker.stderr is not None and worker.stderr.readline().startswith("worker jobs/g:")
            server.kill()
            server.start()  # empty: no stream, no group
            time.sleep(1.5)  # the worker reconnects and makes its group again
            ids = emit(jobs, "jobs", ["a", "b", "c"], url=server.url)
            out, err = worker.communicate(timeout=30)
        finally:
            worker.kill()
            worker.communicate()
        assert worker.returncode == 0, err
        assert json.loads(out)["acked"] == 3 and sorted(i for _, i in handled(jobs)) == sorted(ids)
    finally:
        server.stop()


def test_the_worker_whose_try_reaches_the_limit_dead_letters_the_event_itself(jobs):
    emit(jobs, "jobs", ["a", "b", "poison"])  # the failing try is the worker's last one
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "3",
                      "--max-deliveries", "1", "--json", timeout=60)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["succeeded"], summary["failed"], summary["acked"], summary["deadLettered"]) == (2, 1, 2, 1)
    assert "failed (delivery 1 of 1; moved to jobs.dead-letter): " in result.stderr and "poison event" in result.stderr
    assert pending(jobs, "jobs", "g") == 0  # nothing left for a next run to find
    dead = jobs.cli("run", "event-wait", "--topic", "jobs.dead-letter", "--timeout", "2000")
    [letter] = json.loads(dead.stdout)
    assert letter["data"]["event"]["data"] == "poison" and letter["data"]["deliveries"] == 1
    assert letter["data"]["group"] == "g" and letter["data"]["event"]["topic"] == "jobs"


@pytest.mark.attack("worker poison entries")
def test_an_entry_without_a_body_never_reaches_the_handler(jobs):
    # it used to reach the handler as an event with data null (the docs said it never does)
    import redis

    client = redis.Redis.from_url(jobs.url)
    key = f"agentapps:{jobs.namespace}:events:jobs"
    bodiless = [client.xadd(key, {"x": "1"}).decode(), client.xadd(key, {"e": '{"type": "t"}'}).decode()]
    ids = emit(jobs, "jobs", ["a"])
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "3", "--json",
                      timeout=30)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["succeeded"], summary["failed"], summary["deadLettered"]) == (1, 2, 2)
    assert [event_id for _, event_id in handled(jobs)] == ids
    dead = json.loads(jobs.cli("run", "event-wait", "--topic", "jobs.dead-letter", "--timeout", "0").stdout)
    assert [(d["data"]["event"]["id"], d["data"]["reason"]) for d in dead] == [(i, "malformed") for i in bodiless]


@pytest.mark.attack("worker poison entries")
def test_poison_bodies_are_dead_lettered_at_once_in_a_form_event_wait_lists(jobs):
    # the worker used to copy a poison body into jobs.dead-letter as it was: listing the dead letters
    # failed, and acknowledged them all first (10 of 10 lost); and each took maxDeliveries tries
    import redis

    client = redis.Redis.from_url(jobs.url)
    key = f"agentapps:{jobs.namespace}:events:jobs"
    poison = [client.xadd(key, {"e": f"garbage {n}"}).decode() for n in range(10)]
    ids = emit(jobs, "jobs", ["a"])
    result = jobs.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "11",
                      "--max-deliveries", "3", "--json", timeout=30)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["succeeded"], summary["failed"], summary["deadLettered"]) == (1, 10, 10)
    assert [event_id for _, event_id in handled(jobs)] == ids and pending(jobs, "jobs", "g") == 0
    listed = jobs.cli("run", "event-wait", "--topic", "jobs.dead-letter", "--timeout", "0")
    assert listed.returncode == 0, listed.stderr
    dead = json.loads(listed.stdout)
    assert [d["data"]["event"]["id"] for d in dead] == poison
    assert [d["data"]["raw"] for d in dead] == [{"e": f"garbage {n}"} for n in range(10)]
    assert all(d["data"]["reason"] == "malformed" and d["data"]["deliveries"] == 1 and d["data"]["group"] == "g"
               and "not a JSON object" in d["data"]["error"] for d in dead)
