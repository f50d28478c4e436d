"""One args limit, the same in every door (schemas/validation.py): the args a run starts with may hold
a string of any length up to 1 MiB of JSON in all, whether they come as a flag, in --args-file, on
stdin, to serve, to mcp-server or in a worker's event; more than 1 MiB is refused by each. Real
processes, as a user or client meets them."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from tests.serve.conftest import start
from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures

LONG = "x" * 100_000  # over the 64 000 characters a call between skills may pass in one string
HUGE = "x" * (1024 * 1024 + 10)

MEASURE = """
frontmatter = {"name": "measure", "description": "Says how long its text is.", "metadata": {"params": {
    "type": "object", "properties": {"text": {"type": "string"}, "event": {}}}}}

def run(ctx, args):
    text = args["event"]["data"]["text"] if "event" in args else args["text"]
    open("measured", "a").write(f"{len(text)}\\n")
    return len(text)
"""


@pytest.fixture
def doors(redis_project: Any) -> Any:  # noqa: F811 - the worker's events need a store other processes see
    redis_project.project.write("measure.skill.py", MEASURE)
    return redis_project


def via_flag(d: Any, text: str) -> tuple[bool, str]:
    done = d.cli("run", "measure", "--text", text)
    return done.returncode == 0 and done.stdout == f"{len(text)}\n", done.stderr


def via_args_file(d: Any, text: str) -> tuple[bool, str]:
    (d.root / "args.json").write_text(json.dumps({"text": text}))
    done = d.cli("run", "--args-file", "args.json", "measure")
    return done.returncode == 0 and done.stdout == f"{len(text)}\n", done.stderr


def via_stdin(d: Any, text: str) -> tuple[bool, str]:
    done = d.cli("run", "--args-file", "-", "measure", input=json.dumps({"text": text}))
    return done.returncode == 0 and done.stdout == f"{len(text)}\n", done.stderr


def via_serve(d: Any, text: str) -> tuple[bool, str]:
    server = start(d.project, env={"AGENTAPPS_REDIS_URL": d.url})
    try:
        with server.client() as client:
            answer = client.post("/invocations", json={"skill": "measure", "args": {"text": text}})
    finally:
        server.stop()
    return answer.status_code == 200 and answer.json()["result"] == len(text), answer.text[:300]


def via_mcp(d: Any, text: str) -> tuple[bool, str]:
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    async def call() -> tuple[bool, str]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "agentapps", "mcp-server"],
                                       cwd=str(d.root), env=d.env())
        async with Client(params) as client:
            try:
                result = await client.call_tool("measure", {"text": text})
            except MCPError as exc:
                return False, str(exc)
        said = "".join(getattr(c, "text", "") for c in result.content)
        return not result.is_error and said == str(len(text)), said[:300]

    return asyncio.run(asyncio.wait_for(call(), 60))


def via_worker(d: Any, text: str) -> tuple[bool, str]:
    from agentapps.events.streams import streams_for

    streams_for(d.project.boot().globals).emit("jobs", "job", {"text": text})
    done = d.cli("worker", "jobs", "--group", "g", "--handler", "measure", "--max-events", "1",
                 "--max-deliveries", "1", timeout=60)
    measured = (d.root / "measured").read_text().split() if (d.root / "measured").exists() else []
    return done.returncode == 0 and measured[-1:] == [str(len(text))], done.stderr[-300:]


DOORS = {"flag": via_flag, "args-file": via_args_file, "stdin": via_stdin, "serve": via_serve,
         "mcp-server": via_mcp, "worker": via_worker}


def test_a_long_string_is_admitted_by_every_door(doors):
    admitted = {name: door(doors, LONG) for name, door in DOORS.items()}
    assert {name: ok for name, (ok, _) in admitted.items()} == dict.fromkeys(DOORS, True), admitted


@pytest.mark.parametrize("door", ["args-file", "stdin", "serve", "mcp-server"])
def test_more_than_one_mib_is_refused_by_every_door(doors, door):
    ok, said = DOORS[door](doors, HUGE)
    assert not ok and ("1 MiB" in said or "1048576 bytes" in said), said  # serve: its body cap
    assert not (doors.root / "measured").exists()  # refused before the skill ran
