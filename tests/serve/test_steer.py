"""Steering and follow-ups over `agentapps serve`: `POST /steer` stops a running agent's tool calls
(a `shell` command included) and its message is the next model step's; `POST /follow-up` becomes
the next user turn when the model would otherwise end the run. Only the stream's owner may send
either, and only while the run goes on; what is sent is redacted wherever it is shown."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentapps.agent.steering import MAX_WAITING
from tests.serve.conftest import Served, make_project, start
from tests.serve.skills import GREET, LEAKY, SECRET, SLOW
from tests.serve.test_api import ALICE, BOB, Stream
from tests.support.waiting import wait_for

SLEEP = "exec sleep 30.0173"  # an argument no other process on the machine has
SLEEPER = [{"text": "Sleeping.", "code": [f"await ctx.manager.invoke('shell', {{command: '{SLEEP}'}}); return 1"]},
           {"text": "Changed course."}]
PLANNER = [{"text": "Planning.", "code": ["return 'ran'"], "delay": 1.5}, {"text": "Replanned."}]
ASKER = [{"text": "Greeting.", "code": ["return await ctx.manager.invoke('greet', {name: 'Bob'})"]},
         {"text": "Steered."}]
TALKER = [{"text": "Working.", "code": ["return 6 * 7"], "delay": 1.0}, {"text": "First answer."},
          {"text": "Second answer."}]
AFTER = """
import asyncio

frontmatter = {"name": "after", "description": "Asks an agent, then sleeps.", "metadata": {"params": {"type": "object"}}}

async def run(ctx, args):
    said = await ctx.manager.invoke("quick", {})
    await asyncio.sleep(3)
    return said
"""


def _agent(project: Any, name: str, turns: list[dict[str, Any]], allowed: str | None = None,
           **meta: Any) -> None:
    """A served markdown skill played by agent-scripted, logging what its model is sent."""
    project.write(f"{name}.turns.json", json.dumps({"turns": turns}))
    model = {"agent": "agent-scripted", "script": f"{name}.turns.json", "snippetTimeout": 60,
             "requests": str(project.root / f"{name}.requests.jsonl")}
    head = f"allowed-tools: {allowed}\n" if allowed else ""
    project.write(f"{name}.skill.md", f"---\nname: {name}\ndescription: A scripted agent.\n{head}"
                  f"metadata: {json.dumps({'model': model, 'params': {'type': 'object'}, **meta})}\n---\nDo the task.\n")


def _fresh(project: Any, name: str) -> None:
    """Forget what earlier runs of `name` sent its model."""
    (project.root / f"{name}.requests.jsonl").unlink(missing_ok=True)


def _sleeping() -> bool:
    """The command is running (found by its arguments: in the OS sandbox it has a pid of its own)."""
    shown = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return any(line.split()[:2] == ["sleep", "30.0173"] for line in shown.splitlines())


def _requests(project: Any, name: str) -> list[dict[str, Any]]:
    path = project.root / f"{name}.requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_project(tmp_path_factory.mktemp("steer"))


@pytest.fixture(scope="module")
def served(project: Any) -> Iterator[Served]:
    project.write("leaky.skill.py", LEAKY)  # declares SERVE_TEST_SECRET: the server redacts its value
    _agent(project, "sleeper", SLEEPER, allowed="shell")
    _agent(project, "talker", TALKER)
    _agent(project, "planner", PLANNER)
    project.write("greet.skill.py", GREET)
    _agent(project, "asker", ASKER, allowed="greet", trust="greet")  # its call of greet waits for approval
    _agent(project, "waiter", [{"text": "Waiting.", "delay": 3}, {"text": "unused"}])
    _agent(project, "quick", [{"text": "Done at once."}])
    project.write("slow.skill.py", SLOW)
    project.write("after.skill.py", AFTER)
    _agent(project, "patient", [{"text": "Waiting.", "delay": 3}, {"text": "Took them."}])
    server = start(project, "--token", ALICE, "--token", BOB, "--timeout", "60", "--heartbeat", "0.2",
                   env={"SERVE_TEST_SECRET": SECRET})
    yield server
    server.stop()


def _post(server: Served, path: str, body: dict[str, Any], token: str = ALICE) -> Any:
    with server.client(token) as client:
        return client.post(path, json=body)


def test_a_steer_interrupts_a_running_shell_call_and_the_next_model_step_sees_it(served, project):
    _fresh(project, "sleeper")
    stream = Stream(served, "sleeper")
    wait_for(_sleeping, what="the shell command to start")
    started = time.monotonic()
    answer = _post(served, "/steer", {"streamId": stream.id, "message": "Stop sleeping; list the files."})
    assert answer.status_code == 202 and answer.json() == {"ok": True, "streamId": stream.id, "queued": "steer"}
    got = stream.finish(timeout=20)
    assert time.monotonic() - started < 10  # not the 30 s the command would take
    data = dict(got)
    assert data["result"]["ok"] and data["result"]["result"] == "Changed course."
    assert "Interrupted: the user steered the run" in json.dumps(data["tool-error"])
    assert data["steer"]["text"] == "Stop sleeping; list the files." and data["steer"]["turnNumber"] == 1
    second = _requests(project, "sleeper")[1]["input"]  # what the model was sent in its next step
    shown = json.loads(second[0]["text"])
    assert shown["ok"] is False and shown["error"].startswith("Interrupted: the user steered the run")
    assert second[1] == "Stop sleeping; list the files."
    wait_for(lambda: not _sleeping(), timeout=5, what="the shell command to be killed")


def test_tool_calls_a_model_step_asked_for_before_a_steer_are_skipped(served, project):
    _fresh(project, "planner")
    stream = Stream(served, "planner")
    stream.wait_for("turn-start")  # the model call is in flight
    assert _post(served, "/steer", {"streamId": stream.id, "message": "Plan again."}).status_code == 202
    got = dict(stream.finish(timeout=20))
    assert got["result"]["result"] == "Replanned."
    second = _requests(project, "planner")[1]["input"]
    assert second == [{"status": "error", "text": "Denied: The user steered the run (their message follows); "
                                                  "this call did not run."}, "Plan again."]


def test_a_steer_calls_off_the_approval_the_stopped_call_waited_for(served, project):
    _fresh(project, "asker")
    stream = Stream(served, "asker")
    pending = stream.wait_for("approval-pending")
    assert _post(served, "/steer", {"streamId": stream.id, "message": "Do not greet."}).status_code == 202
    got = stream.finish(timeout=20)
    data = dict(got)
    assert data["approval-decided"] == {"approvalId": pending["approvalId"], "decision": "cancelled"}
    assert data["result"]["result"] == "Steered."
    assert "Interrupted: the user steered the run" in json.dumps(data["tool-error"])
    decision = {"streamId": stream.id, "approvalId": pending["approvalId"], "decision": "approve"}
    assert _post(served, "/approve", decision).status_code == 404  # nothing is left to decide


def test_a_follow_up_becomes_the_next_user_turn_once_the_model_would_end_the_run(served, project):
    _fresh(project, "talker")
    stream = Stream(served, "talker")
    stream.wait_for("turn-start")  # turn 1 is in flight: its tool call is still to come
    answer = _post(served, "/follow-up", {"streamId": stream.id, "message": "Now say it in French."})
    assert answer.status_code == 202 and answer.json()["queued"] == "follow-up"
    got = stream.finish(timeout=20)
    data = dict(got)
    assert data["result"]["ok"] and data["result"]["result"] == "Second answer."
    assert data["result"]["turns"] == 3
    inputs = [r["input"] for r in _requests(project, "talker")]
    assert [i for i in inputs[1] if isinstance(i, str)] == []  # turn 1 made a tool call: no follow-up yet
    assert inputs[2] == ["Now say it in French."]  # turn 2 answered, which would have ended the run
    assert data["follow-up"]["text"] == "Now say it in French." and data["follow-up"]["turnNumber"] == 2


def test_only_the_streams_owner_may_steer_or_follow_up(served, project):
    _fresh(project, "waiter")
    stream = Stream(served, "waiter")
    stream.wait_for("turn-start")
    for path in ("/steer", "/follow-up"):
        refused = _post(served, path, {"streamId": stream.id, "message": "mine now"}, token=BOB)
        assert refused.status_code == 403, refused.text
        assert "Only the client that started the stream" in refused.json()["error"]["message"]
    got = dict(stream.finish())
    assert got["result"]["result"] == "Waiting."  # nothing Bob sent reached the agent
    assert "steer" not in got and "follow-up" not in got
    assert _requests(project, "waiter")[1:] == []


def test_a_flood_of_follow_ups_is_429_beyond_what_may_wait(served, project):
    _fresh(project, "patient")
    stream = Stream(served, "patient")
    stream.wait_for("turn-start")  # the model step takes 3 s: nothing is taken until it ends
    answers = [_post(served, "/follow-up", {"streamId": stream.id, "message": f"more {n}"}).status_code
               for n in range(MAX_WAITING + 3)]
    assert answers == [202] * MAX_WAITING + [429] * 3
    refused = _post(served, "/follow-up", {"streamId": stream.id, "message": "one too many"})
    assert f"{MAX_WAITING} follow-up messages already wait" in refused.json()["error"]["message"]
    got = dict(stream.finish(timeout=20))
    assert got["result"]["result"] == "Took them."
    sent = _requests(project, "patient")[1]["input"]  # the one user turn they all went in
    assert sent == ["\n\n".join(f"more {n}" for n in range(MAX_WAITING))]


@pytest.mark.parametrize("path", ["/steer", "/follow-up"])
def test_a_finished_or_unknown_run_is_404(served, project, path):
    stream = Stream(served, "quick")
    stream.finish()
    for stream_id in (stream.id, "no-such-stream"):
        gone = _post(served, path, {"streamId": stream_id, "message": "too late"})
        assert gone.status_code == 404 and "No open stream" in gone.json()["error"]["message"]


@pytest.mark.parametrize("body", [{}, {"message": ""}, {"message": "   "}, {"message": 7},
                                  {"message": "x" * 32_001}])
def test_a_bad_message_is_400(served, project, body):
    stream = Stream(served, "waiter")
    stream.wait_for("turn-start")
    bad = _post(served, "/steer", {"streamId": stream.id, **body})
    assert bad.status_code == 400 and "'message' must be a non-empty string" in bad.json()["error"]["message"]
    _post(served, "/cancel", {"streamId": stream.id})
    stream.finish()


def test_a_secret_in_a_steer_is_redacted_wherever_it_is_shown(served, project):
    stream = Stream(served, "sleeper")
    wait_for(_sleeping, what="the shell command to start")
    message = f"use the key {SECRET} instead"
    assert _post(served, "/steer", {"streamId": stream.id, "message": message}).status_code == 202
    got = stream.finish(timeout=20)
    assert dict(got)["steer"]["text"] == "use the key [redacted:SERVE_TEST_SECRET] instead"
    assert SECRET not in json.dumps(got)
    assert _requests(project, "sleeper")[-1]["input"][1] == message  # the model is sent it, as user input is
    written = [p for root in (project.root, project.home) for p in root.rglob("*")
               if p.is_file() and not p.name.endswith(".requests.jsonl")]
    assert written and not [p for p in written if SECRET in p.read_text(errors="replace")]


def test_a_run_with_no_agent_or_whose_agent_ended_is_409(served, project):
    slow = Stream(served, "slow", {"seconds": 3})
    refused = _post(served, "/steer", {"streamId": slow.id, "message": "hurry"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["message"] == f"Stream '{slow.id}' cannot take the message: it runs no agent."
    after = Stream(served, "after")
    after.wait_for("agent-complete")  # its agent answered; the code skill goes on sleeping
    for path in ("/steer", "/follow-up"):
        late = _post(served, path, {"streamId": after.id, "message": "too late"})
        assert late.status_code == 409, late.text
        assert late.json()["error"]["message"].endswith("cannot take the message: its agent has already ended.")
    assert dict(after.finish())["result"]["result"] == "Done at once."
    assert dict(slow.finish())["result"]["result"] == "slept"
