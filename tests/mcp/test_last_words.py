"""What a crashed MCP server said last reaches the user, after earlier calls too: a Python server
built on asyncio or anyio dies with an exception-group traceback, whose last line is the box's
bottom edge (`+-----...`), and a server may die between two calls rather than during one.

The server here is a few lines of JSON-RPC over stdio, so it can crash exactly so; the calls go
through the real CLI (`agentapps run`), as a user meets them."""

from __future__ import annotations

import json
import sys
from typing import Any

SERVER = r'''
import asyncio, json, sys, threading, time

def answer(message_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()

async def widget_store():
    raise RuntimeError("the widget store is gone")

async def crash():
    async with asyncio.TaskGroup() as group:  # dies as anyio and asyncio servers do
        group.create_task(widget_store())

calls = 0
for line in sys.stdin:
    message = json.loads(line)
    method, message_id = message.get("method"), message.get("id")
    if method == "initialize":
        answer(message_id, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                            "serverInfo": {"name": "shaky", "version": "1"}})
    elif method == "tools/list":
        answer(message_id, {"tools": [{"name": name, "inputSchema": {"type": "object"}}
                                      for name in ("work", "crash", "bye")]})
    elif method == "tools/call":
        calls += 1
        name = message["params"]["name"]
        print(f"INFO handled call {calls} ({name})", file=sys.stderr, flush=True)
        if name == "crash":
            asyncio.run(crash())
        answer(message_id, {"content": [{"type": "text", "text": f"{name} {calls}"}]})
        if name == "bye":  # answers, then dies before the next call
            print("fatal: lost the database connection", file=sys.stderr, flush=True)
            sys.stdout.close()
            sys.exit(4)
'''

CALLER = '''
frontmatter = {"name": "caller", "allowed-tools": "shaky-*", "metadata": {"params": {"type": "object", "properties": {
    "calls": {"type": "array", "items": {"type": "string"}}}}}}

async def run(ctx, args):
    import asyncio

    said = []
    for tool in args["calls"]:
        try:
            said.append(await ctx.manager.invoke(tool, {}))
        except Exception as exc:
            said.append(f"error: {exc}")
        await asyncio.sleep(0.3)  # time for a server that answered and died to be gone
    return said
'''


def _project(project: Any) -> None:
    project.write("shaky.py", SERVER)
    server = {"command": sys.executable, "args": [str(project.root / "shaky.py")]}
    metadata = {"role": "main", "mcp": {"shaky": server}}
    project.write("main.skill.md", f"---\nname: main\ndescription: Test.\nmetadata: {json.dumps(metadata)}\n---\nMain.\n")
    project.write("caller.skill.py", CALLER)


def _said(project: Any, *calls: str) -> list[str]:
    result = project.cli("run", "caller", "--calls", json.dumps(list(calls)))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_crash_after_earlier_calls_names_the_error_not_the_traceback_box(project):
    _project(project)
    *worked, crashed = _said(project, "shaky-work", "shaky-work", "shaky-crash")
    assert worked == ["work 1", "work 2"]
    assert crashed.startswith("error: MCP server 'shaky' exited during 'crash' (exit code 1); its last words: ")
    assert crashed.endswith("RuntimeError: the widget store is gone.")


def test_a_server_that_dies_between_calls_is_reported_with_its_last_words(project):
    _project(project)
    said = _said(project, "shaky-work", "shaky-bye", "shaky-work", "shaky-bye", "shaky-work")
    assert said[:4] == ["work 1", "bye 2", "work 1", "bye 2"]  # restarted once after the first death
    assert said[4] == ("error: MCP server 'shaky' failed 2 times in this run (last: exited (exit code 4); its "
                       "last words: fatal: lost the database connection); it is not started again.")
