"""One run, five doors: the same canaries and the same approval question through `run`, `repl`,
`worker`, `serve` and `mcp-server`, as real processes.

- A code skill fails with a multi-line declared secret (a PEM key) in its message: every door shows
  the same error record, and no line of the key, in any door's output or in the run log.
- A model (agent-bedrock against the loopback fake Converse API) streams a declared secret split
  across two text deltas: no door lets it through whole or in pieces that join up.
- A skill whose trust rule asks before it calls another, with nobody there to answer: every door
  denies it (exit 3) and runs nothing.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.bedrock import FakeBedrock, Reply
from tests.serve.conftest import events, start
from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures

PEM = "-----BEGIN TEST KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf\n9Cnzj4p4WGeKLs1Pt8Qu\n-----END TEST KEY-----"
TOKEN = "tok-CANARY-8c1f0a55d2e94b7b"
PIECES = [f"The token is {TOKEN[:9]}", f"{TOKEN[9:]} and that is all."]  # split mid-secret
KEY_LINES = [line for line in PEM.splitlines() if len(line) > 8]

CRASH = """
import os

frontmatter = {"name": "crash", "description": "Fails with a key in its message.",
               "metadata": {"params": {"type": "object", "properties": {"event": {}}}, "env": ["CANARY_PEM"]}}

def run(ctx, args):
    raise RuntimeError("cannot use the key:\\n" + os.environ["CANARY_PEM"])
"""
GREET = """
frontmatter = {"name": "greet", "description": "Greets.", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    open("greeted", "a").write("x")
    return "hello"
"""
GUARDED = """
frontmatter = {"name": "guarded", "description": "Calls greet, which its trust rule guards.",
               "metadata": {"params": {"type": "object", "properties": {"event": {}}}, "trust": "greet"}}

async def run(ctx, args):
    return await ctx.manager.invoke("greet", {})
"""


@pytest.fixture
def fake() -> Iterator[FakeBedrock]:
    bedrock = FakeBedrock([Reply(text=list(PIECES)) for _ in range(8)]).start()
    yield bedrock
    bedrock.close()


@pytest.fixture
def doors(redis_project: Any, fake: FakeBedrock, tmp_path: Path) -> Any:  # noqa: F811
    project = redis_project.project
    (tmp_path / "aws").mkdir()
    for name in ("config", "credentials"):
        (tmp_path / "aws" / name).write_text("")
    project.write("crash.skill.py", CRASH)
    project.write("greet.skill.py", GREET)
    project.write("guarded.skill.py", GUARDED)
    metadata = {"model": {"agent": "agent-bedrock", "id": "us.test-model"}, "env": ["CANARY_TOKEN"],
                "params": {"type": "object", "properties": {"event": {}}}}
    project.write("leak.skill.md", "---\nname: leak\ndescription: Streams a secret.\nallowed-tools: greet\n"
                                   f"metadata: {json.dumps(metadata)}\n---\nSay the token.\n")
    redis_project.env = {
        "CANARY_PEM": PEM, "CANARY_TOKEN": TOKEN, "AGENTAPPS_REDIS_URL": redis_project.url,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.endpoint_url, "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEFAKEKEY00", "AWS_SECRET_ACCESS_KEY": "fake-secret",
        "AWS_CONFIG_FILE": str(tmp_path / "aws" / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws" / "credentials"), "AWS_EC2_METADATA_DISABLED": "true"}
    return redis_project


def leaked(text: str) -> list[str]:
    """The pieces of a canary found in `text` (deltas joined: a split secret shows up whole)."""
    found = [line for line in KEY_LINES if line in text]
    return found + [TOKEN] * (TOKEN in text) + [TOKEN[9:]] * (TOKEN[9:] in text)


def run_log(project: Any) -> tuple[list[tuple[str, int, str | None]], bytes]:
    folder = project.root / ".agent-apps" / "runs"
    conn = sqlite3.connect(folder / "runs.db")
    rows = conn.execute("SELECT skill, exit_code, error FROM runs ORDER BY id").fetchall()
    conn.close()
    return rows, b"".join(p.read_bytes() for p in folder.iterdir())


# -- the doors, each as a user or client meets it: a real process ------------------------------------


def via_run(d: Any, skill: str) -> tuple[dict[str, Any], str]:
    done = d.project.cli("run", "--json", skill, real_process=True, **d.env)
    return json.loads(done.stdout), done.stdout + done.stderr


def via_serve(d: Any, skill: str) -> tuple[dict[str, Any], str]:
    server = start(d.project, env=d.env)
    try:
        with server.client() as client, client.stream("POST", "/chat", json={"skill": skill}) as response:
            got = list(events(response))
    finally:
        _, stderr = server.stop()
    deltas = "".join(data["text"] for name, data in got if name == "text-delta")
    return got[-1][1], deltas + json.dumps(got) + stderr


def via_mcp(d: Any, skill: str) -> tuple[dict[str, Any], str]:
    from mcp import Client, StdioServerParameters

    said: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    async def call() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "agentapps", "mcp-server"],
                                       cwd=str(d.root), env=d.project.env(**d.env))
        async with Client(params) as client:
            return await client.call_tool(skill, {}, progress_callback=progress)

    result = asyncio.run(asyncio.wait_for(call(), 60))
    text = "".join(getattr(c, "text", "") for c in result.content)
    return {"ok": not result.is_error, "text": text}, text + "\n".join(said)


def via_worker(d: Any, skill: str) -> tuple[dict[str, Any], str]:
    from agentapps.events.streams import streams_for

    streams_for(d.project.boot().globals).emit("jobs", "job", {"n": 1})
    done = d.cli("worker", "jobs", "--group", "g", "--handler", skill, "--max-events", "1",
                 "--max-deliveries", "1", timeout=60, real_process=True, **d.env)
    return {"exit": done.returncode}, done.stdout + done.stderr


def via_repl(d: Any, skill: str) -> tuple[dict[str, Any], str]:
    done = d.project.cli("repl", skill, input="go\n", real_process=True, **d.env)
    return {"exit": done.returncode}, done.stdout + done.stderr


def test_a_multiline_secret_in_an_error_is_one_redacted_record_in_every_door(doors):
    ran, out_run = via_run(doors, "crash")
    served, out_serve = via_serve(doors, "crash")
    called, out_mcp = via_mcp(doors, "crash")
    handled, out_worker = via_worker(doors, "crash")
    for door, output in (("run", out_run), ("serve", out_serve), ("mcp-server", out_mcp), ("worker", out_worker)):
        assert leaked(output) == [], door
    # one record: the same type, exit code and message through the CLI, the HTTP answer and MCP
    assert ran["error"] == served["error"]
    assert ran["error"]["exit_code"] == 1 and "[redacted:CANARY_PEM]" in ran["error"]["message"]
    assert "\n" not in ran["error"]["message"]
    assert called == {"ok": False, "text": ran["error"]["message"]}
    assert handled == {"exit": 0}  # the worker went on; the event was dead-lettered
    rows, stored = run_log(doors.project)
    assert [(skill, code) for skill, code, _ in rows] == [("crash", 1)] * 4
    assert all(error.startswith(ran["error"]["message"]) for _, _, error in rows)
    assert not any(line.encode() in stored for line in KEY_LINES)


def test_a_secret_split_across_two_streamed_deltas_never_reaches_a_client(doors):
    ran, out_run = via_run(doors, "leak")
    served, out_serve = via_serve(doors, "leak")
    called, out_mcp = via_mcp(doors, "leak")
    handled, out_worker = via_worker(doors, "leak")
    talked, out_repl = via_repl(doors, "leak")
    for door, output in (("run", out_run), ("serve", out_serve), ("mcp-server", out_mcp),
                         ("worker", out_worker), ("repl", out_repl)):
        assert leaked(output) == [], door
        assert "[redacted:CANARY_TOKEN]" in output or door == "worker", door
    assert ran["ok"] and served["ok"] and called["ok"] and handled == talked == {"exit": 0}
    assert ran["result"] == served["result"] == called["text"] == "The token is [redacted:CANARY_TOKEN] and that is all."
    _, stored = run_log(doors.project)
    assert TOKEN.encode() not in stored


def test_an_approval_nobody_can_answer_is_denied_in_every_door(doors):
    doors.env["AGENTAPPS_TRUST_TIMEOUT"] = "1"  # serve and mcp-server wait this long for an answer (else 60 s)
    ran, _ = via_run(doors, "guarded")
    served, _ = via_serve(doors, "guarded")
    called, _ = via_mcp(doors, "guarded")
    via_worker(doors, "guarded")
    assert ran["error"]["exit_code"] == served["error"]["exit_code"] == 3
    assert ran["error"]["type"] == served["error"]["type"] == "DeniedError"
    assert called["ok"] is False and called["text"] == ran["error"]["message"]
    assert not (doors.root / "greeted").exists()  # greet never ran
    rows, _ = run_log(doors.project)
    assert [(skill, code) for skill, code, _ in rows] == [("guarded", 3)] * 4
