"""`agentapps mcp-server` driven by the SDK's own client, over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.fakes.mcpkit import SECRET

GREET = """
frontmatter = {"name": "greet", "description": "Greet someone.", "metadata": {
    "params": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    "returns": {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]}}}

def run(ctx, args):
    return {"greeting": f"Hello, {args['name']}!"}
"""
BOOM = """
frontmatter = {"name": "boom", "description": "Always fails.", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    raise RuntimeError("the gears\\nare stuck")
"""
SECRETIVE = """
import os

frontmatter = {"name": "secretive", "description": "Leaks a declared secret.",
               "metadata": {"params": {"type": "object"}, "env": ["MCP_TEST_SECRET"]}}

def run(ctx, args):
    return "the secret is " + os.environ["MCP_TEST_SECRET"]
"""
RISKY = """
frontmatter = {"name": "risky", "description": "Calls greet, which its trust rule guards.",
               "metadata": {"params": {"type": "object"}, "trust": "greet"}}

async def run(ctx, args):
    return await ctx.manager.invoke("greet", {"name": "Bob"})
"""
HIDDEN = """
frontmatter = {"name": "secret-helper", "metadata": {"visibility": "hidden", "params": {"type": "object"}}}

def run(ctx, args):
    return "hidden"
"""
MIDDLEWARE = """
frontmatter = {"name": "stamp", "metadata": {"role": "middleware"}}

async def run(ctx, args):
    await ctx.manager.next()
"""
TURNS = [{"text": "Looking.", "code": ["return 1"], "delay": 0.4}, {"text": "Still looking.", "code": ["return 2"],
         "delay": 0.4}, {"text": "Found it.", "delay": 0.4}]
OFFERED = ["agentapps_message", "boom", "greet", "risky", "secretive", "story"]  # story is an agent skill


@pytest.fixture
def served(project: Any) -> Any:
    for name, source in (("greet", GREET), ("boom", BOOM), ("secretive", SECRETIVE), ("risky", RISKY),
                         ("secret-helper", HIDDEN), ("stamp", MIDDLEWARE)):
        project.write(f"{name}.skill.py", source)
    project.write("story.turns.json", json.dumps({"turns": TURNS}))
    model = {"agent": "agent-scripted", "script": "story.turns.json", "requests": str(project.root / "requests.jsonl")}
    project.write("story.skill.md", f"---\nname: story\ndescription: A scripted agent.\nmetadata: "
                                    f"{json.dumps({'model': model})}\n---\nTell me.\n")
    return project


def stdio(project: Any, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "agentapps", "mcp-server", *extra],
                                 cwd=str(project.root), env=project.env())


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def approve_once(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"answer": "once"})


def test_skills_are_tools_and_failures_are_results_over_stdio(served):
    async def session() -> None:
        async with Client(stdio(served)) as client:  # the SDK's default mode: it settles on the handshake
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert sorted(tools) == OFFERED  # no hidden skill, no middleware, nothing bundled
            assert tools["greet"].input_schema["required"] == ["name"]
            assert tools["greet"].output_schema["required"] == ["greeting"]
            greeted = await client.call_tool("greet", {"name": "Ada"})
            assert greeted.structured_content == {"greeting": "Hello, Ada!"} and not greeted.is_error
            failed = await client.call_tool("boom", {})
            assert failed.is_error  # one line, with the file and line, as `agentapps run` prints it
            assert text(failed) == f"{served.root / 'boom.skill.py'}:4: Skill 'boom' failed: RuntimeError: the gears are stuck"
            missing = await client.call_tool("greet", {})  # a tool result the model reads and corrects
            assert missing.is_error and "'name' is required" in text(missing)
            typo = await client.call_tool("greet", {"nmae": "Ada"})  # as `agentapps run` says --name
            assert typo.is_error and text(typo).endswith("'name' is required. Did you mean 'name' instead of 'nmae'?")
            with pytest.raises(MCPError, match="Unknown tool 'secret-helper'"):
                await client.call_tool("secret-helper", {})
            assert text(await client.call_tool("secretive", {})) .startswith("the secret is [redacted:")
            assert (await client.call_tool("greet", {"name": "Bo"})).structured_content == {"greeting": "Hello, Bo!"}

    run(session())


def test_each_call_lands_in_the_run_log_as_a_run_of_its_own(served):
    async def session() -> None:
        async with Client(stdio(served)) as client:
            assert not (await client.call_tool("greet", {"name": "Ada"})).is_error
            assert (await client.call_tool("boom", {})).is_error
            assert text(await client.call_tool("story", {})) == "Found it."
            assert (await client.call_tool("greet", {})).is_error  # refused before it ran: not a run

    run(session())
    listed = served.cli("runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["runs"]
    assert [(r["skill"], r["exit_code"]) for r in rows] == [("story", 0), ("boom", 1), ("greet", 0)]
    story, boom, greet = rows
    assert story["turns"] == 3 and story["steps"] == 2 and story["stop_reason"] == "answered"
    assert "RuntimeError: the gears are stuck" in boom["error"] and greet["error"] is None
    assert greet["args_digest"].startswith("sha256:") and "Ada" not in listed.stdout


def test_allowed_tools_narrow_what_is_offered_and_callable(served):
    async def session() -> None:
        async with Client(stdio(served, "--allowed-tools", "greet hello")) as client:
            assert sorted(t.name for t in (await client.list_tools()).tools) == ["greet", "hello"]
            with pytest.raises(MCPError, match="Unknown tool 'boom'"):
                await client.call_tool("boom", {})
            assert text(await client.call_tool("hello", {"name": "Ada"})) == "Hello, Ada!"  # named: bundled

    run(session())


def test_a_changed_skill_file_sends_tool_list_changed(served):
    async def session() -> None:
        changed = asyncio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with Client(stdio(served), message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            await client.list_tools()
            served.write("fresh.skill.py", GREET.replace('"greet"', '"fresh"'))
            await asyncio.wait_for(changed.wait(), 10)
            assert "fresh" in [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]

    run(session())


def test_allowed_tools_patterns_that_select_no_skill_are_named_in_a_warning(served):
    proc, _ = _http_server(served, "--allowed-tools", "greet nothing-* #no-such-tag bom")
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    [warning] = [line for line in err.decode().splitlines() if line.startswith("warning:")]
    assert warning == ("warning: agentapps mcp-server: --allowed-tools 'nothing-*', '#no-such-tag', 'bom' "
                       "select no skill (serving 1 skill). Did you mean 'boom' for 'bom'?")


def test_trust_approvals_are_asked_by_elicitation_over_stdio(served):
    async def session(**kw: Any) -> types.CallToolResult:
        async with Client(stdio(served), mode="legacy", **kw) as client:
            return await client.call_tool("risky", {})

    approved = run(session(elicitation_callback=approve_once))
    assert approved.structured_content is None and json.loads(text(approved)) == {"greeting": "Hello, Bob!"}
    refused = run(session())  # a client without elicitation: denied, not asked on some terminal
    assert refused.is_error and "needs approval (trust rule 'greet')" in text(refused)


# -- HTTP: one server for the tests below -------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http_server(project: Any, *extra: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "mcp-server", "--transport", "http", "--port",
                             str(port), "--heartbeat", "0.3", *extra], cwd=project.root, env=project.env(),
                            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the HTTP server did not come up")


@pytest.fixture(scope="module")
def http_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    from tests.conftest import Project

    root = tmp_path_factory.mktemp("served")
    project = Project(root / "proj", root / "home")
    (project.root / ".agent-apps").mkdir(parents=True)
    project.home.mkdir()
    served_project = served.__wrapped__(project)
    old = os.environ.get("MCP_TEST_SECRET")
    os.environ["MCP_TEST_SECRET"] = SECRET
    proc, port = _http_server(served_project)
    try:
        yield served_project, f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
        if old is None:
            os.environ.pop("MCP_TEST_SECRET", None)


async def _story_progress(client: Client) -> tuple[types.CallToolResult, list[str]]:
    seen: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    return await client.call_tool("story", {}, progress_callback=progress), seen


def _assert_story_progress(result: types.CallToolResult, seen: list[str]) -> None:
    assert text(result) == "Found it."
    assert "Looking." in seen and "Found it." in seen and "agent finished: answered" in seen
    assert any(m.startswith("still running") for m in seen)  # turns take 0.4 s, the heartbeat is 0.3 s


async def _cancel_story(client: Client, log: Any) -> None:
    first = asyncio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        first.set()

    call = asyncio.ensure_future(client.call_tool("story", {}, progress_callback=progress))
    await first.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    before = log.read_text().count("\n") if log.exists() else 0
    await asyncio.sleep(1.5)  # long enough for two more turns, had the run gone on
    assert (log.read_text().count("\n") if log.exists() else 0) == before
    greeted = await client.call_tool("greet", {"name": "Ada"})  # and the server serves on
    assert greeted.structured_content == {"greeting": "Hello, Ada!"}


def _assert_cancelled_run_logged(project: Any) -> None:
    rows = json.loads(project.cli("runs", "list", "--json", "--skill", "story").stdout)["runs"]
    assert any(r["exit_code"] == 130 and r["error"] == "Cancelled by the MCP client." for r in rows), rows


def test_stdio_calls_stream_agent_progress_with_a_heartbeat(served):
    async def session() -> tuple[types.CallToolResult, list[str]]:
        async with Client(stdio(served, "--heartbeat", "0.3")) as client:
            return await _story_progress(client)

    _assert_story_progress(*run(session()))


def test_stdio_cancellation_stops_the_run(served):
    async def session() -> None:
        async with Client(stdio(served)) as client:
            await _cancel_story(client, served.root / "requests.jsonl")

    run(session())
    _assert_cancelled_run_logged(served)


def test_http_calls_stream_agent_progress_with_a_heartbeat(http_project):
    _, url = http_project

    async def session() -> tuple[types.CallToolResult, list[str]]:
        async with Client(url) as client:
            return await _story_progress(client)

    _assert_story_progress(*run(session()))


def test_http_cancellation_stops_the_run(http_project):
    project, url = http_project

    async def session() -> None:
        async with Client(url) as client:
            await _cancel_story(client, project.root / "requests.jsonl")

    run(session())
    _assert_cancelled_run_logged(project)


def test_http_invalid_arguments_are_error_results_an_unknown_tool_a_protocol_error(http_project):
    _, url = http_project

    async def session() -> None:
        async with Client(url) as client:
            for args, says in (({}, "'name' is required"),
                               ({"nmae": "Ada"}, "'name' is required. Did you mean 'name' instead of 'nmae'?"),
                               ({"name": 42}, "'name': 42 is not of type 'string'")):
                refused = await client.call_tool("greet", args)  # the model reads it and can try again
                assert refused.is_error is True and says in refused.content[0].text, refused
            with pytest.raises(MCPError, match="Unknown tool 'secret-helper'") as unknown:
                await client.call_tool("secret-helper", {})
            assert unknown.value.code == types.INVALID_PARAMS
            greeted = await client.call_tool("greet", {"name": "Ada"})
            assert greeted.structured_content == {"greeting": "Hello, Ada!"}

    run(session())


def test_http_approvals_by_elicitation(http_project):
    _, url = http_project

    async def session(**kw: Any) -> types.CallToolResult:
        async with Client(url, **kw) as client:
            return await client.call_tool("risky", {})

    assert not run(session(elicitation_callback=approve_once)).is_error
    refused = run(session())
    assert refused.is_error and "needs approval" in text(refused)


def test_http_advertises_list_changed_and_a_changed_skill_file_notifies_the_client(http_project):
    project, url = http_project

    async def session() -> list[str]:
        changed = asyncio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with Client(url, message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True  # as over stdio
            await client.list_tools()
            project.write("fresh.skill.py", GREET.replace('"greet"', '"fresh"'))
            try:
                await asyncio.wait_for(changed.wait(), 10)
                return [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]
            finally:
                (project.root / "fresh.skill.py").unlink()

    assert "fresh" in run(session())


def test_http_on_another_address_needs_a_token_and_checks_origins(served):
    refused = served.cli("mcp-server", "--transport", "http", "--host", "0.0.0.0", real_process=True)
    assert refused.returncode == 2 and "needs --token" in refused.stderr
    proc, port = _http_server(served, "--host", "0.0.0.0", "--token", "s3cret-token")
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        import httpx2

        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        assert httpx2.post(url, json=body, headers=accept).status_code == 401
        wrong = httpx2.post(url, json=body, headers={**accept, "Authorization": "Bearer nope"})
        assert wrong.status_code == 403  # as in serve: 401 without a token, 403 with a wrong one
        evil = httpx2.post(url, json=body, headers={**accept, "Authorization": "Bearer s3cret-token",
                                                    "Origin": "https://evil.example"})
        assert evil.status_code == 403

        async def session() -> list[str]:
            client_http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"})
            from mcp.client.streamable_http import streamable_http_client

            async with client_http, Client(streamable_http_client(url, http_client=client_http)) as client:
                return [t.name for t in (await client.list_tools()).tools]

        assert sorted(run(session())) == OFFERED
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_both_ways_one_projects_skill_calls_a_tool_another_project_serves(project, served, tmp_path):
    other = tmp_path / "other"
    (other / ".agent-apps").mkdir(parents=True)
    server = {"command": sys.executable, "args": ["-m", "agentapps", "mcp-server"], "cwd": str(project.root)}
    main = {"role": "main", "mcp": {"peer": server}}
    (other / "main.skill.md").write_text(f"---\nname: main\nmetadata: {json.dumps(main)}\n---\n")
    (other / "ask-peer.skill.py").write_text(
        'frontmatter = {"name": "ask-peer", "metadata": {"params": {"type": "object"}}}\n\n'
        'async def run(ctx, args):\n    return await ctx.manager.invoke("peer-greet", {"name": "Ada"})\n')
    result = project.cli("run", "ask-peer", cwd=other)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"greeting": "Hello, Ada!"}
    # the served project's mcp-server is gone (this test process works in that folder too)
    leftovers = [p for p in os.listdir("/proc") if p.isdigit() and _cwd(p) == str(project.root)
                 and int(p) != os.getpid()]
    assert leftovers == []


def _cwd(pid: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


DIG = {"turns": [{"text": "Digging.", "code": "return await ctx.manager.invoke('shell', "
                  "{command: 'echo $$ > shell.pid; exec sleep 47.5', timeout: 120})"}, {"text": "Done."}]}


def _parents() -> dict[int, int]:
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                found[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return found


def _descendants(pid: int) -> set[int]:
    parents, found, todo = _parents(), set(), [pid]
    while todo:
        parent = todo.pop()
        children = {p for p, pp in parents.items() if pp == parent} - found
        found |= children
        todo += children
    return found


def _started(pid: int) -> int:
    """When a process started, in clock ticks since boot (field 22 of /proc/PID/stat)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _serving(project: Any) -> int:
    """The pid of the project's `agentapps mcp-server` (the SDK's stdio client started it)."""
    [pid] = [p for p in map(int, filter(str.isdigit, os.listdir("/proc"))) if "mcp-server" in _cmdline(p)
             and _cwd(str(p)) == str(project.root) and p != os.getpid()]
    return pid


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_cancelling_a_run_kills_the_shell_and_sandbox_processes_it_started(served, transport):
    from tests.fakes.mcpkit import alive

    served.write("dig.turns.json", json.dumps(DIG))
    served.write("dig.skill.md", "---\nname: dig\ndescription: Runs a long command from agent code.\n"
                                 "allowed-tools: shell\nmetadata: {\"model\": {\"agent\": \"agent-scripted\", "
                                 "\"script\": \"dig.turns.json\"}}\n---\nDig.\n")
    pidfile = served.root / "shell.pid"
    proc = None
    if transport == "http":
        proc, port = _http_server(served)

    async def session() -> dict[str, bool]:
        target: Any = stdio(served) if proc is None else f"http://127.0.0.1:{port}/mcp"
        async with Client(target) as client:
            server = proc.pid if proc is not None else _serving(served)
            call = asyncio.ensure_future(client.call_tool("dig", {}))
            deadline = time.monotonic() + 20
            while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            # (found by its command line: inside the OS sandbox, `$$` is the namespace's pid)
            [shell] = [p for p in _descendants(server) if _cmdline(p).startswith("sleep 47.5")]
            # the server keeps a spare sandbox process warm (sandbox/pool.py): the run's is the older
            # one, taken when the run began; the spare started then stays for the next run
            sandbox = min((p for p in _descendants(server) if "sandbox/child.py" in _cmdline(p)),
                          key=lambda p: (_started(p), p))  # (in one clock tick: the lower pid came first)
            assert alive(shell) and "sleep 47.5" in _cmdline(shell) and alive(sandbox)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            deadline = time.monotonic() + 5
            while (alive(shell) or alive(sandbox)) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            left = {"shell": alive(shell), "sandbox": alive(sandbox)}  # before the server ends
            greeted = await client.call_tool("greet", {"name": "Ada"})  # the server serves on
            assert greeted.structured_content == {"greeting": "Hello, Ada!"}
            return left

    try:
        left = run(session())
    finally:
        if proc is not None:
            proc.terminate()
            proc.communicate(timeout=10)
    assert left == {"shell": False, "sandbox": False}  # killed by the cancellation, not by the server's exit


def test_a_clients_approval_is_for_that_call_only_and_the_terminals_remembered_ones_do_not_answer_for_it(served):
    """The user's state folder holds what the person at the terminal approved for good: it answers
    for no client, and no client's answer is written into it."""
    from agentapps.approvals import remember, scope_of, store_for

    asked: list[Any] = []

    async def always(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.requested_schema["properties"]["answer"]["enum"])
        return types.ElicitResult(action="accept", content={"answer": "always"})

    async def session(**kw: Any) -> types.CallToolResult:
        async with Client(stdio(served), mode="legacy", **kw) as client:
            return await client.call_tool("risky", {})

    store = remember(served.root, scope_of(caller="risky", callee="greet", rule="greet", constraints=(), action=(),
                                           view={"name": "Bob"}))
    assert store == store_for(served.root) and served.home in store.parents
    refused = run(session())  # remembered at the terminal, yet a client that cannot be asked is denied
    assert refused.is_error and "needs approval (trust rule 'greet')" in text(refused)
    store.unlink()
    approved = run(session(elicitation_callback=always))
    assert not approved.is_error and asked == [["once", "deny"]]
    assert not store.exists()  # a client's "always" counts once and is kept for no one
