"""Two `agentapps serve` processes sharing one Redis: approvals, cancellations, threads and
schedules work across them (the real server at 127.0.0.1:6379; each test has its own key prefix)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.conftest import REDIS_URL, Served, make_project, redis_or_skip, start
from tests.serve.skills import CHATTY, GREET, SLOW, TWICE_TURNS, agent_skill

PAUSER_TURNS = [{"text": "Waiting.", "code": ["return await ctx.manager.invoke('slow', {seconds: 30})"]},
                {"text": "Changed course."}]
from tests.serve.test_api import ALICE, BOB, Stream

TICK = """
import os, time

frontmatter = {"name": "tick", "description": "Notes the second it ran.",
               "metadata": {"params": {"type": "object"}, "schedule": "* * * * * *"}}

def run(ctx, args):
    with open("ticks.log", "a") as out:
        out.write(f"{int(time.time())} {os.getpid()}\\n")
    return "ticked"
"""


def _pair(project: Any, space: str, *argv: str) -> tuple[Served, Served]:
    project.write("main.skill.md", f"---\nname: {space}\nmetadata:\n  role: main\n---\nThe project.\n")
    env = {"AGENTAPPS_REDIS_URL": REDIS_URL, "AGENTAPPS_TRUST_TIMEOUT": "5"}
    first = start(project, "--token", ALICE, "--token", BOB, *argv, env=env)
    try:
        second = start(project, "--token", ALICE, "--token", BOB, *argv, env=env)
    except BaseException:
        first.stop()
        raise
    assert "(Redis)" in first.lines[-1] and "(Redis)" in second.lines[-1]
    return first, second


def _forget(client: Any, space: str) -> None:
    keys = list(client.scan_iter(f"agentapps:serve:{space}:*"))
    if keys:
        client.delete(*keys)


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Served]]:
    client = redis_or_skip()
    space = f"servetest-{secrets.token_hex(4)}"
    project = make_project(tmp_path_factory.mktemp("replicas"))
    project.write("greet.skill.py", GREET)
    project.write("slow.skill.py", SLOW)
    project.write("chatty.skill.py", CHATTY.replace('"session": "args.sessionId"',
                                                    '"session": {"key": "args.sessionId", "store": "file"}'))
    agent_skill(project, "twice", TWICE_TURNS, {"trust": "greet"}, allowed="greet")
    agent_skill(project, "pauser", PAUSER_TURNS, allowed="slow")
    first, second = _pair(project, space)
    yield first, second
    first.stop()
    second.stop()
    assert not list(client.scan_iter(f"agentapps:serve:{space}:stream:*"))  # closed streams leave no record
    _forget(client, space)


def test_an_approval_posted_to_one_replica_resumes_a_stream_held_by_another(replicas):
    holder, other = replicas
    stream = Stream(holder, "twice")
    pending = stream.wait_for("approval-pending")
    decision = {"streamId": stream.id, "approvalId": pending["approvalId"], "decision": "approve"}
    with other.client(BOB) as bob:
        assert bob.post("/approve", json=decision).status_code == 403  # the owner is known there too
    with other.client(ALICE) as alice:
        assert alice.post("/approve", json=decision).status_code == 200
        second = stream.wait_for("approval-pending", nth=2)  # still open: the repeat cannot race the stream's end
        assert alice.post("/approve", json=decision).status_code == 409  # the first decision wins
        assert alice.post("/approve", json={**decision, "approvalId": second["approvalId"]}).status_code == 200
    got = stream.finish()
    assert [data["decision"] for name, data in got if name == "approval-decided"] == ["approve", "approve"]
    assert dict(got)["result"]["result"] == "Done."


def test_a_cancel_posted_to_one_replica_stops_a_stream_held_by_another(replicas):
    holder, other = replicas
    stream = Stream(holder, "slow", {"seconds": 20})
    stream_id = stream.id
    started = time.monotonic()
    with other.client(ALICE) as alice:
        assert alice.post("/cancel", json={"streamId": stream_id}).status_code == 200
    got = dict(stream.finish())
    assert got["error"]["error"]["exit_code"] == 130 and time.monotonic() - started < 3
    with other.client(ALICE) as alice:
        assert alice.post("/cancel", json={"streamId": stream_id}).status_code == 404


def test_a_steer_posted_to_one_replica_reaches_the_agent_of_a_stream_held_by_another(replicas):
    holder, other = replicas
    stream = Stream(holder, "pauser")
    stream.wait_for("tool-call")
    steer = {"streamId": stream.id, "message": "Stop waiting."}
    started = time.monotonic()
    with other.client(BOB) as bob:
        assert bob.post("/steer", json=steer).status_code == 403  # the owner is known there too
    with other.client(ALICE) as alice:
        assert alice.post("/steer", json=steer).status_code == 202
    got = dict(stream.finish())
    assert time.monotonic() - started < 4  # not the snippet's 5 s timeout
    assert got["steer"]["text"] == "Stop waiting." and got["result"]["result"] == "Changed course."
    assert "Interrupted: the user steered the run" in json.dumps(got["tool-error"])


def test_a_message_the_holder_cannot_take_is_refused_alike_through_another_replica(replicas):
    holder, other = replicas
    stream = Stream(holder, "slow", {"seconds": 3})  # a code skill: no agent ever reads a message
    for path in ("/steer", "/follow-up"):
        with other.client(ALICE) as alice:
            refused = alice.post(path, json={"streamId": stream.id, "message": "hurry"})
        assert refused.status_code == 409, refused.text  # the holder's answer, not a blind 202
        assert refused.json()["error"]["message"] == \
            f"Stream '{stream.id}' cannot take the message: it runs no agent."
    assert dict(stream.finish())["result"]["result"] == "slept"


def test_a_relayed_message_is_checked_again_by_the_replica_holding_the_stream(replicas):
    holder, _ = replicas
    stream = Stream(holder, "pauser")
    stream.wait_for("tool-call")
    client = redis_or_skip()
    [key] = client.scan_iter(f"agentapps:serve:*:stream:{stream.id}")
    prefix = key[: -len(f"stream:{stream.id}")]
    token = secrets.token_hex(8)  # whoever can publish on the channel, not only a replica that checked it
    client.publish(prefix + "signals", json.dumps({"kind": "steer", "stream": stream.id, "text": "x" * 40_000,
                                                   "reply": token}))
    _, said = client.blpop([prefix + f"reply:{token}"], timeout=5)
    assert json.loads(said)["status"] == 400 and "'message'" in json.loads(said)["why"]
    with holder.client(ALICE) as alice:
        assert alice.post("/cancel", json={"streamId": stream.id}).status_code == 200
    assert "steer" not in dict(stream.finish())
    client.delete(prefix + f"claim:{token}")


def test_a_thread_started_on_one_replica_continues_on_another(replicas):
    first, second = replicas
    with first.client(ALICE) as alice:
        thread = alice.post("/invocations", json={"skill": "chatty", "args": {"text": "one"}}).json()["threadId"]
    with second.client(ALICE) as alice:
        body = alice.post("/invocations", json={"skill": "chatty", "args": {"text": "two"},
                                                "threadId": thread}).json()
        assert body["result"] == {"heard": "two", "before": 1}
        assert [t["runs"] for t in alice.get("/threads").json()["threads"] if t["id"] == thread] == [2]
    with first.client(BOB) as bob:
        assert bob.get(f"/threads/{thread}").status_code == 404
    with first.client(ALICE) as alice:
        assert alice.delete(f"/threads/{thread}").status_code == 200
    with second.client(ALICE) as alice:
        assert alice.get(f"/threads/{thread}").status_code == 404


def test_a_schedule_fires_once_across_two_replicas(tmp_path):
    client = redis_or_skip()
    space = f"servetest-{secrets.token_hex(4)}"
    project = make_project(tmp_path)
    project.write("tick.skill.py", TICK)
    first, second = _pair(project, space)
    said: list[Any] = []
    try:
        log, deadline = project.root / "ticks.log", time.monotonic() + 20
        while time.monotonic() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 3):
            time.sleep(0.05)
        # both stop at once, right as a tick has started: a run that ends while its server shuts down
        # is in the run log too (tests/serve/test_cli.py pins that on its own)
    finally:
        for served in (first, second):
            if served.proc.poll() is None:
                served.proc.send_signal(15)
        said += [first.stop(), second.stop()]
        _forget(client, space)
    ticks = [line.split() for line in (project.root / "ticks.log").read_text().splitlines()]
    seconds = [int(t[0]) for t in ticks]
    assert len(seconds) >= 2, ticks
    assert len(seconds) == len(set(seconds)), f"a due second ran twice: {ticks}"
    runs = json.loads(project.cli("runs", "list", "--json").stdout)["runs"]
    logged = [r for r in runs if r["skill"] == "tick"]
    assert len(logged) == len(seconds), f"every run that ran is in the run log; the servers said: {said}"
