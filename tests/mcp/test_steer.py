"""Steering and follow-ups over `agentapps mcp-server`, driven by the SDK's own client: the tool
`agentapps_message` names a running tools/call of the same session (by its request id or progress
token) and hands its agent a message, as `POST /steer` and `POST /follow-up` do for `serve`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.test_server import GREET, _http_server

TIMEOUT = float(os.environ.get("AGENTAPPS_TEST_MCP_STEER_TIMEOUT", "60"))
SLEEP = "exec sleep 30.0419"  # an argument no other process on the machine has
SLEEPER = [{"text": "Sleeping.", "code": [f"await ctx.manager.invoke('shell', {{command: '{SLEEP}'}}); return 1"]},
           {"text": "Changed course."}]
TALKER = [{"text": "Working.", "code": ["return 6 * 7"], "delay": 1.0}, {"text": "First answer."},
          {"text": "Second answer."}]
WAITER = [{"text": "Waiting.", "delay": 2.0}, {"text": "unused"}]
ASKER = [{"text": "Greeting.", "code": ["return await ctx.manager.invoke('greet', {name: 'Bob'})"]},
         {"text": "Steered."}]


def _agent(project: Any, name: str, turns: list[dict[str, Any]], allowed: str | None = None, **meta: Any) -> None:
    """A markdown skill played by agent-scripted, logging what its model is sent."""
    project.write(f"{name}.turns.json", json.dumps({"turns": turns}))
    model = {"agent": "agent-scripted", "script": f"{name}.turns.json", "snippetTimeout": 60,
             "requests": str(project.root / f"{name}.requests.jsonl")}
    head = f"allowed-tools: {allowed}\n" if allowed else ""
    project.write(f"{name}.skill.md", f"---\nname: {name}\ndescription: A scripted agent.\n{head}"
                  f"metadata: {json.dumps({'model': model, 'params': {'type': 'object'}, **meta})}\n---\nDo the task.\n")


def _requests(project: Any, name: str) -> list[dict[str, Any]]:
    path = project.root / f"{name}.requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _sleeping() -> bool:
    shown = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return any(line.split()[:2] == ["sleep", "30.0419"] for line in shown.splitlines())


async def _until(condition: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.05)


def _fill(project: Any) -> Any:
    project.write("greet.skill.py", GREET)
    _agent(project, "sleeper", SLEEPER, allowed="shell")
    _agent(project, "talker", TALKER)
    _agent(project, "waiter", WAITER)
    _agent(project, "asker", ASKER, allowed="greet", trust="greet")  # its call of greet asks the client
    return project


@pytest.fixture
def agents(project: Any) -> Any:
    return _fill(project)


def stdio(project: Any, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "agentapps", "mcp-server", *extra],
                                 cwd=str(project.root), env=project.env())


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


def text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def start(client: Client, skill: str, token: str) -> asyncio.Task[types.CallToolResult]:
    """Call `skill` in the background, with the progress token `token` (no progress callback: the
    client's own token stays on the request)."""
    return asyncio.ensure_future(client.call_tool(skill, {}, meta={"progressToken": token}))


async def message(client: Client, **args: Any) -> types.CallToolResult:
    return await client.call_tool("agentapps_message", args)


def _assert_steered(project: Any, result: types.CallToolResult, said: str) -> None:
    assert not result.is_error and text(result) == "Changed course."
    second = _requests(project, "sleeper")[1]["input"]  # what the model was sent in its next step
    shown = json.loads(second[0]["text"])
    assert shown["ok"] is False and shown["error"].startswith("Interrupted: the user steered the run")
    assert second[1] == said


def test_a_steer_over_stdio_interrupts_a_running_shell_call_and_the_next_model_step_sees_it(agents):
    async def session() -> tuple[types.CallToolResult, types.CallToolResult, float]:
        async with Client(stdio(agents)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "steer" in (tools["agentapps_message"].description or "")
            call = start(client, "sleeper", "sleep-1")
            await _until(_sleeping, "the shell command to start")
            began = time.monotonic()
            sent = await message(client, progressToken="sleep-1", kind="steer", message="Stop; list the files.")
            return sent, await call, time.monotonic() - began

    sent, result, took = run(session())
    assert not sent.is_error and json.loads(text(sent)) == {"ok": True, "queued": "steer", "skill": "sleeper"}
    assert took < 10  # not the 30 s the command would take
    _assert_steered(agents, result, "Stop; list the files.")
    assert not _sleeping()


def test_a_call_is_named_by_its_request_id_too_and_its_progress_tells_of_the_steer(agents):
    seen: list[str] = []

    async def progress(done: float, total: float | None, said: str | None) -> None:
        seen.append(said or "")

    async def session() -> types.CallToolResult:
        async with Client(stdio(agents)) as client:
            # a client that knows its request ids (this SDK mints them itself unless given one)
            request = {"name": "sleeper", "arguments": {}}
            call = asyncio.ensure_future(client.session._dispatcher.send_raw_request(
                "tools/call", request, {"request_id": "call-7", "on_progress": progress}))
            await _until(_sleeping, "the shell command to start")
            sent = await message(client, requestId="call-7", kind="steer", message="Enough sleeping.")
            assert not sent.is_error, text(sent)
            return types.CallToolResult.model_validate(await call)

    _assert_steered(agents, run(session()), "Enough sleeping.")
    assert "steer taken: Enough sleeping." in seen


def test_a_steer_withdraws_the_approval_question_the_stopped_call_put_to_the_client(agents):
    asked: list[str] = []
    withdrawn = asyncio.Event()

    async def never_answer(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        try:
            await asyncio.sleep(TIMEOUT)
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return types.ElicitResult(action="accept", content={"answer": "once"})

    async def session() -> types.CallToolResult:
        async with Client(stdio(agents), mode="legacy", elicitation_callback=never_answer) as client:
            call = start(client, "asker", "ask-1")
            await _until(lambda: asked, "the approval question")
            sent = await message(client, progressToken="ask-1", kind="steer", message="Do not greet.")
            assert not sent.is_error, text(sent)
            result = await call
            await asyncio.wait_for(withdrawn.wait(), 10)  # the question is gone while the session lasts
            return result

    result = run(session())
    assert text(result) == "Steered." and len(asked) == 1
    second = _requests(agents, "asker")[1]["input"]
    assert "Interrupted: the user steered the run" in second[0]["text"] and second[1] == "Do not greet."


def test_a_follow_up_over_stdio_continues_the_run(agents):
    async def session() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with Client(stdio(agents)) as client:
            call = start(client, "talker", "talk-1")
            await _until(lambda: _requests(agents, "talker"), "the first model step")
            sent = await message(client, progressToken="talk-1", kind="follow-up", message="Now in French.")
            return sent, await call

    sent, result = run(session())
    assert json.loads(text(sent))["queued"] == "follow-up"
    assert text(result) == "Second answer."  # without the follow-up the run ends with "First answer."
    inputs = [r["input"] for r in _requests(agents, "talker")]
    assert len(inputs) == 3 and inputs[2] == ["Now in French."]


def test_unknown_finished_and_codeless_calls_and_bad_messages_are_tool_errors(agents):
    async def session() -> list[types.CallToolResult]:
        async with Client(stdio(agents)) as client:
            answers = [await message(client, requestId=99, kind="steer", message="anyone?")]
            done = await client.call_tool("waiter", {}, meta={"progressToken": "w-1"})
            assert text(done) == "Waiting."
            answers.append(await message(client, progressToken="w-1", kind="steer", message="too late"))
            call = start(client, "waiter", "w-2")
            await _until(lambda: len(_requests(agents, "waiter")) == 2, "the second run's model step")
            for bad in ({"kind": "nudge", "message": "hi"}, {"kind": "steer", "message": "  "},
                        {"kind": "steer", "message": "x" * 32_001}, {"kind": "steer"},
                        {"kind": "steer", "message": "hi", "requestId": 1, "progressToken": "w-2"},
                        {"kind": "steer", "message": "hi", "progressToken": ["w-2"]},
                        {"kind": "steer", "message": "hi", "progressToken": "w-2", "extra": 1}):
                answers.append(await message(client, **({"progressToken": "w-2"} | bad)))
            assert text(await call) == "Waiting."  # nothing refused reached the agent
            return answers

    unknown, finished, *bad = run(session())
    assert unknown.is_error and text(unknown) == ("No running call of this session has requestId 99: "
                                                  "it has finished, or never started.")
    assert finished.is_error and "progressToken \"w-1\": it has finished" in text(finished)
    assert [b.is_error for b in bad] == [True] * 7
    said = [text(b) for b in bad]
    assert said[0] == "'kind' must be 'steer' or 'follow-up'."
    assert said[1] == said[2] == said[3] == "'message' must be a non-empty string of at most 32000 characters."
    assert said[4] == "Name the call by exactly one of 'requestId' and 'progressToken'."
    assert said[5] == "'progressToken' must be a string or an integer."
    assert said[6] == "agentapps_message takes requestId or progressToken, kind and message, not: extra."
    assert len(_requests(agents, "waiter")) == 2  # one step a run: a steer taken would have made one more


def test_a_code_skill_call_runs_no_agent_to_message(agents):
    slow = ('frontmatter = {"name": "slow", "metadata": {"params": {"type": "object"}}}\n\n'
            'import asyncio\n\nasync def run(ctx, args):\n    await asyncio.sleep(1.5)\n    return "slept"\n')
    agents.write("slow.skill.py", slow)

    async def session() -> types.CallToolResult:
        async with Client(stdio(agents)) as client:
            call = start(client, "slow", "s-1")
            await asyncio.sleep(0.5)
            refused = await message(client, progressToken="s-1", kind="steer", message="hurry")
            assert text(await call) == "slept"
            return refused

    refused = run(session())
    assert refused.is_error
    assert text(refused) == "The call with progressToken \"s-1\" (skill 'slow') cannot take the message: it runs no agent."


def test_the_tool_is_offered_beside_agent_skills_and_absent_when_only_code_skills_are(agents):
    async def session(*extra: str) -> list[str]:
        async with Client(stdio(agents, *extra)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            if "agentapps_message" not in names:
                from mcp.shared.exceptions import MCPError

                with pytest.raises(MCPError, match="Unknown tool 'agentapps_message'"):
                    await message(client, requestId=1, kind="steer", message="hi")
            return names

    assert sorted(run(session())) == ["agentapps_message", "asker", "greet", "sleeper", "talker", "waiter"]
    assert run(session("--allowed-tools", "greet")) == ["greet"]


@pytest.fixture(scope="module")
def http_agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    from tests.conftest import Project

    root = tmp_path_factory.mktemp("steered")
    project = Project(root / "proj", root / "home")
    (project.root / ".agent-apps").mkdir(parents=True)
    project.home.mkdir()
    _fill(project)
    proc, port = _http_server(project)
    try:
        yield project, f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_over_http_only_the_session_that_started_a_call_may_message_it(http_agents):
    project, url = http_agents

    async def session() -> tuple[types.CallToolResult, types.CallToolResult, types.CallToolResult, float]:
        async with Client(url) as mine, Client(url) as other:
            call = start(mine, "sleeper", "http-1")
            await _until(_sleeping, "the shell command to start")
            refused = await message(other, progressToken="http-1", kind="steer", message="mine now")
            began = time.monotonic()
            sent = await message(mine, progressToken="http-1", kind="steer", message="Stop over HTTP.")
            return refused, sent, await call, time.monotonic() - began

    refused, sent, result, took = run(session())
    assert refused.is_error and text(refused) == (
        "The call with progressToken \"http-1\" belongs to another MCP session: only the session that "
        "started a call may message it.")
    assert not sent.is_error and took < 10
    _assert_steered(project, result, "Stop over HTTP.")
    assert "mine now" not in json.dumps(_requests(project, "sleeper"))
