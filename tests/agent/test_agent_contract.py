"""The provider contract from the outside: a custom provider skill, the trace, events, interrupts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentapps.events.bus import bus_for
from tests.support.waiting import wait_for

# the provider the guide points to (examples/custom-provider), tested here against the contract
PROVIDER = Path(__file__).resolve().parents[2] / "examples" / "custom-provider" / "openai-chat.skill.py"


class _ChatHandler(BaseHTTPRequestHandler):
    """A scripted OpenAI-compatible /chat/completions endpoint."""

    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append(body)
        reply = self.server.replies.pop(0)
        data = json.dumps({"choices": [{"message": {"role": "assistant", **reply}}],
                           "usage": {"prompt_tokens": 7, "completion_tokens": 3}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def chat_api() -> Iterator[Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatHandler)
    server.seen, server.replies = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_custom_provider_skill_follows_the_contract(agentic, chat_api):
    """The guide's complete provider example, selected with model.agent, against a fake API."""
    agentic.project.write("providers/openai-chat.skill.py", PROVIDER.read_text())
    agentic.code("wc", "len(args['text'].split())",
                 params={"type": "object", "properties": {"text": {"type": "string"}}})
    agentic.skill("count", None, allowed="wc", returns={"type": "integer"}, model={
        "agent": "openai-chat", "id": "llama3",
        "baseUrl": f"http://127.0.0.1:{chat_api.server_address[1]}/v1"})
    code = "ctx.manager.finish(await ctx.manager.invoke('wc', {text: 'one two three'}))"
    chat_api.replies += [
        {"content": "Ready."},  # no finish: the agent reminds the model of `returns`
        {"content": None, "tool_calls": [{"id": "c1", "type": "function",
                                          "function": {"name": "invoke", "arguments": json.dumps({"code": code})}}]},
    ]
    result = agentic.run("--json", "count")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == 3 and out["usage"] == {"inputTokens": 14, "outputTokens": 6, "cacheReadInputTokens": 0,
                                                  "cacheWriteInputTokens": 0}
    first, second = chat_api.seen
    assert first["model"] == "llama3" and "## wc" in first["messages"][0]["content"]
    assert first["tools"][0]["function"]["name"] == "invoke"
    assert "ctx.manager.finish(value)" in second["messages"][-1]["content"]  # the reminder


def test_the_trace_lands_on_the_served_context_and_events_are_emitted(project):
    project.write("capture.skill.py", '''
        frontmatter = {"name": "capture", "metadata": {"role": "middleware", "after": ["$pre-execute"], "before": ["$execute"]}}

        async def run(ctx, args):
            try:
                await ctx.manager.next()
            finally:
                ctx.globals.cache_for("test")["captured"] = dict(ctx.target.locals.get("agent") or {})
        ''')
    project.write("t.json", json.dumps({"turns": [{"text": "Working.", "code": "return 1"}, {"text": "Done."}]}))
    project.write("traced.skill.md", """
        ---
        name: traced
        metadata: {capture: true, model: {agent: agent-scripted, script: t.json}}
        ---
        Do it.
        """)
    project.write("direct.skill.py", '''
        frontmatter = {"name": "direct", "allowed-tools": "agent"}

        async def run(ctx, args):
            return await ctx.manager.invoke("agent", {
                "prompt": "Do it.", "userMessage": "go", "events": "progress",
                "config": {"agent": "agent-scripted", "script": "t.json"}})
        ''')
    root = project.boot()
    g = root.globals
    assert project.invoke("traced", root=root) == "Done."
    captured = g.cache_for("test")["captured"]
    kinds = [e["type"] for e in captured["trace"]]
    assert kinds == ["turn-start", "message", "tool-call", "tool-result", "turn-end",
                     "turn-start", "message", "turn-end", "complete"]
    totals = captured["trace"][-1]  # the run's totals close its trace
    assert (totals["stopReason"], totals["turns"], totals["steps"]) == ("answered", 2, 1)
    assert totals["usage"] == captured["usage"] and "cost" in totals
    assert all(isinstance(e["timestamp"], int) for e in captured["trace"])
    assert captured["stopReason"] == "answered" and captured["turns"] == 2 and captured["steps"] == 1
    bus = bus_for(g)
    bus.subscribe("progress")
    assert project.invoke("direct", root=root) == "Done."
    events = [e.type for e in bus.topics["progress"].queues["default"].take(None, True)]
    assert events[0] == "agent-start" and events[-1] == "agent-complete"
    assert {"turn-start", "tool-call", "tool-result", "turn-end", "agent-message"} <= set(events)


def test_a_runaway_snippet_times_out_and_the_next_one_still_runs(agentic):
    agentic.skill("spin", [
        {"code": "memory.kept = 'yes'; return 1"},
        {"code": "memory.lost = 'no'; while (true) {}"},
        {"code": "return memory"},
        {"text": "done"},
    ], model={"snippetTimeout": 0.3})
    assert agentic.run("spin").returncode == 0
    _, timed_out, after = agentic.tool_results()
    assert timed_out["ok"] is False and timed_out["error"].startswith("timeout:")
    assert after["result"]["kept"] == "yes" and "lost" not in after["result"]


def test_sigint_while_agent_code_waits_on_a_skill_exits_130_quickly(agentic):
    agentic.code("slow", "import asyncio, pathlib\npathlib.Path('slow.started').touch()\n"
                         "await asyncio.sleep(30)\nreturn 1")
    agentic.skill("waits", [{"code": "return await ctx.manager.invoke('slow', {})"}, {"text": "done"}],
                  model={"snippetTimeout": 60})
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "waits"], cwd=agentic.project.root,
                            env=agentic.project.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # its snippet now waits on `slow` (not a fixed 0.5 s after the first turn started)
        wait_for(lambda: (agentic.project.root / "slow.started").exists(), what="the call to 'slow'")
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and took < 2.0, stderr

