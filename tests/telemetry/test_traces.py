"""OpenTelemetry traces: every run's spans reach an OTLP/HTTP receiver through the real exporter.

The receiver is a loopback fake (tests/fakes/otlp.py) that decodes what the OpenTelemetry SDK's
OTLP/HTTP exporter sends; the runs select it the way users do, with the `OTEL_*` variables.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx2
import pytest

from tests.agent.conftest import Agentic
from tests.fakes.otlp import FakeOtlp, Span
from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
WORDS = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


@pytest.fixture
def otlp() -> Iterator[FakeOtlp]:
    with FakeOtlp() as fake:
        yield fake


@pytest.fixture
def agentic(project: Any) -> Agentic:
    return Agentic(project)


def otel_env(fake: FakeOtlp, **extra: str) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": fake.endpoint, "OTEL_SERVICE_NAME": "agentapps-tests", **extra}


def only(spans: list[Span], name: str) -> Span:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def test_a_code_skill_run_exports_one_span_per_skill_call_under_the_run_root(project, otlp):
    project.write("inner.skill.py", 'frontmatter = {"name": "inner"}\n\ndef run(ctx, args):\n    return 2\n')
    project.write("outer.skill.py", 'frontmatter = {"name": "outer", "allowed-tools": "inner"}\n\n'
                  'async def run(ctx, args):\n    return await ctx.manager.invoke("inner", {}) + 1\n')
    result = project.cli("run", "outer", **otel_env(otlp))
    assert result.returncode == 0 and result.stdout == "3\n", result.stderr
    spans = otlp.wait_for(lambda s: {"outer", "inner"} <= {x.name for x in s})
    outer, inner = only(spans, "outer"), only(spans, "inner")
    assert outer.parent_id == "" and inner.parent_id == outer.span_id and inner.trace_id == outer.trace_id
    assert outer.attributes["agentapps.run.id"] and "agentapps.run.id" not in inner.attributes
    assert outer.attributes["agentapps.outcome"] == "ok" and outer.attributes["agentapps.exit_code"] == 0
    assert inner.attributes["agentapps.skill.kind"] == "code" and inner.attributes["agentapps.call.depth"] == 2
    assert outer.resource["service.name"] == "agentapps-tests"
    assert otlp.paths == ["/v1/traces"] * len(otlp.paths)


def test_a_failed_call_says_its_exit_code_and_error(project, otlp):
    project.write("boom.skill.py", 'frontmatter = {"name": "boom"}\n\ndef run(ctx, args):\n'
                  '    raise RuntimeError("it broke")\n')
    result = project.cli("run", "boom", **otel_env(otlp))
    assert result.returncode == 1
    (boom,) = otlp.wait_for(lambda s: any(x.name == "boom" for x in s))
    assert boom.status == 2 and "it broke" in boom.status_message
    assert boom.attributes["agentapps.outcome"] == "error" and boom.attributes["agentapps.exit_code"] == 1
    assert boom.attributes["error.type"]


def test_an_agent_with_a_sub_agent_exports_model_and_tool_spans_with_their_parentage(agentic, otlp):
    agentic.code("wc", '{"words": len(args["text"].split())}', params=WORDS)
    agentic.skill("helper", [
        {"code": "return await ctx.manager.invoke('wc', {text: 'a b c'})",
         "usage": {"inputTokens": 11, "outputTokens": 3}},
        {"text": "three", "usage": {"inputTokens": 20, "outputTokens": 2}},
    ], allowed="wc", model={"id": "helper-model", "pricing": {"helper-model": {"input": 1, "output": 2}}})
    agentic.skill("boss", [
        {"code": "return await ctx.manager.invoke('helper', {})", "usage": {"inputTokens": 100, "outputTokens": 7}},
        {"text": "The helper said three.", "usage": {"inputTokens": 150, "outputTokens": 9}},
    ], allowed="helper", model={"id": "boss-model"})
    result = agentic.run("boss", **otel_env(otlp))
    assert result.returncode == 0 and result.stdout == "The helper said three.\n", result.stderr
    spans = otlp.wait_for(lambda s: {"boss", "helper", "wc"} <= {x.name for x in s})
    by_id = {s.span_id: s for s in spans}
    assert len({s.trace_id for s in spans}) == 1  # one trace for the run

    def ancestors(span: Span) -> list[str]:
        names = []
        while span.parent_id:
            span = by_id[span.parent_id]
            names.append(span.name)
        return names

    boss, helper, wc = only(spans, "boss"), only(spans, "helper"), only(spans, "wc")
    assert boss.parent_id == "" and "agentapps.run.id" in boss.attributes
    # the sub-agent is called from the boss agent's code, so it is a child of that tool call
    assert by_id[helper.parent_id].name == "execute_tool invoke" and by_id[wc.parent_id].name == "execute_tool invoke"
    assert helper.attributes["agentapps.call.from_agent_code"] is True
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert sorted(s.name for s in chats) == ["chat boss-model"] * 2 + ["chat helper-model"] * 2
    first = next(s for s in chats if s.name == "chat helper-model" and s.attributes["agentapps.agent.turn"] == 1)
    assert first.kind == "CLIENT"
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "agent-scripted"
    assert first.attributes["gen_ai.request.model"] == "helper-model"
    assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == (11, 3)
    assert first.attributes["agentapps.cost"] == pytest.approx((11 * 1 + 3 * 2) / 1_000_000)
    assert "agentapps.cost" not in next(s for s in chats if s.name == "chat boss-model").attributes  # no price
    # a model call ends when its answer does, before the tools it asked for run
    tool = next(s for s in spans if s.name == "execute_tool invoke" and s.parent_id == first.parent_id)
    assert first.end_ns <= tool.start_ns and tool.attributes["agentapps.outcome"] == "ok"
    # the plumbing between the agent and its provider (callback refs) has no spans of its own
    top, sub = ["agent", "boss"], ["agent", "helper", "execute_tool invoke", "agent", "boss"]
    assert sorted((s.name, ancestors(s)) for s in spans) == [
        ("agent", ["boss"]), ("agent", sub[1:]), ("agent-scripted", top), ("agent-scripted", sub),
        ("boss", []), ("chat boss-model", top), ("chat boss-model", top),
        ("chat helper-model", sub), ("chat helper-model", sub),
        ("execute_tool invoke", top), ("execute_tool invoke", sub),
        ("helper", ["execute_tool invoke", *top]), ("wc", ["execute_tool invoke", *sub])]


def test_without_otel_variables_a_code_skill_run_never_imports_opentelemetry(project):
    project.write("noop.skill.py", 'frontmatter = {"name": "noop"}\n\ndef run(ctx, args):\n    return "ok"\n')
    code = ("import sys, json\nfrom agentapps.cli import main\n"
            "try:\n    main(['run', 'noop'])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry' "
            "or m == 'agentapps.telemetry.spans')))\n")
    for extra in ({}, {"OTEL_SERVICE_NAME": "x"}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
                                                  "OTEL_TRACES_EXPORTER": "none"}):
        result = subprocess.run([sys.executable, "-c", code], check=False, cwd=project.root,
                                env=project.env(**extra), capture_output=True, text=True, timeout=60)
        assert result.stdout.splitlines()[0] == "ok", result.stderr
        assert json.loads(result.stdout.splitlines()[-1]) == [], extra


def test_configured_without_the_sdk_says_so_in_one_line_and_the_run_succeeds(project):
    project.write("noop.skill.py", 'frontmatter = {"name": "noop"}\n\ndef run(ctx, args):\n    return "ok"\n')
    code = ("import sys\nsys.modules['opentelemetry'] = None  # as if the extra were not installed\n"
            "from agentapps.cli import main\nmain(['run', 'noop'])\n")
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=project.root, capture_output=True,
                            env=project.env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9"), text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stdout == "ok\n"
    (line,) = result.stderr.splitlines()
    assert "pip install 'agentapps[otel]'" in line and "OTEL_" in line


def test_an_unreachable_collector_never_fails_the_run(project):
    project.write("noop.skill.py", 'frontmatter = {"name": "noop"}\n\ndef run(ctx, args):\n    return "ok"\n')
    result = project.cli("run", "noop", real_process=True, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
                         OTEL_EXPORTER_OTLP_TIMEOUT="1")
    assert result.returncode == 0 and result.stdout == "ok\n"


def test_serve_joins_the_trace_of_a_requests_traceparent_and_flushes_at_stop(project, otlp):
    from tests.serve.conftest import start

    project.write("greet.skill.py", 'frontmatter = {"name": "greet"}\n\ndef run(ctx, args):\n    return "hi"\n')
    server = start(project, env=otel_env(otlp))
    try:
        with server.client() as client:
            answer = client.post("/invocations", json={"skill": "greet", "args": {}},
                                 headers={"traceparent": TRACEPARENT})
            plain = client.post("/invocations", json={"skill": "greet", "args": {}})
        assert answer.status_code == 200 and plain.status_code == 200
    finally:
        server.stop()
    spans = otlp.wait_for(lambda s: len([x for x in s if x.name == "greet"]) == 2)
    joined, alone = sorted((s for s in spans if s.name == "greet"), key=lambda s: s.trace_id != TRACE_ID)
    assert (joined.trace_id, joined.parent_id, joined.kind) == (TRACE_ID, PARENT_ID, "SERVER")
    assert alone.trace_id != TRACE_ID and alone.parent_id == ""
    assert joined.attributes["agentapps.run.id"] != alone.attributes["agentapps.run.id"]


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b"pong"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def web() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/ping", seen
    server.shutdown()
    server.server_close()


def test_an_http_call_carries_the_calls_traceparent(project, otlp, web):
    url, seen = web
    project.write("fetcher.skill.py", 'frontmatter = {"name": "fetcher", "allowed-tools": "http"}\n\n'
                  f'async def run(ctx, args):\n    return (await ctx.manager.invoke("http", {{"url": "{url}"}}))["body"]\n')
    result = project.cli("run", "fetcher", AGENTAPPS_HTTP_ALLOW="127.0.0.1", **otel_env(otlp))
    assert result.returncode == 0 and result.stdout == "pong\n", result.stderr
    spans = otlp.wait_for(lambda s: {"fetcher", "http"} <= {x.name for x in s})
    http = only(spans, "http")
    (headers,) = seen
    assert headers["traceparent"].startswith(f"00-{http.trace_id}-{http.span_id}-")  # then the flags


def test_an_http_call_without_traces_sends_no_traceparent(project, web):
    url, seen = web
    project.write("fetcher.skill.py", 'frontmatter = {"name": "fetcher", "allowed-tools": "http"}\n\n'
                  f'async def run(ctx, args):\n    return (await ctx.manager.invoke("http", {{"url": "{url}"}}))["body"]\n')
    assert project.cli("run", "fetcher", AGENTAPPS_HTTP_ALLOW="127.0.0.1").stdout == "pong\n"
    assert "traceparent" not in seen[0]


def test_a_run_with_a_sub_agent_an_mcp_tool_and_an_http_call_is_one_trace_without_a_secret(agentic, otlp, web):
    """The issue's case: every call the agent's code makes is a child of its tool call, the secret
    the MCP server is given (and returns) appears on no span, and the web server joins the trace."""
    from tests.fakes.mcpkit import SECRET, fake_entry, write_main

    url, seen = web
    write_main(agentic.project, {"fake": fake_entry()})
    agentic.skill("helper", [{"text": "helped"}])
    code = ("const a = await ctx.manager.invoke('helper', {}); "
            "const b = await ctx.manager.invoke('fake-echo', {text: 'hi'}); "
            "const s = await ctx.manager.invoke('fake-env', {name: 'TOKEN'}); "
            f"const c = await ctx.manager.invoke('http', {{url: '{url}'}}); return [a, b, c.body, s]")
    # the snippet starts the MCP server (its SDK imports in about a second): more than the 2 s these
    # tests give a snippet, on a busy machine
    agentic.skill("boss", [{"code": code}, {"text": "all done"}], allowed="helper fake-echo fake-env http",
                  model={"snippetTimeout": 30})
    result = agentic.run("boss", MCP_TEST_SECRET=SECRET, AGENTAPPS_HTTP_ALLOW="127.0.0.1", **otel_env(otlp))
    assert result.returncode == 0 and result.stdout == "all done\n", result.stderr
    assert agentic.tool_results()[0]["ok"] is True
    spans = otlp.wait_for(lambda s: {"boss", "helper", "fake-echo", "fake-env", "http"} <= {x.name for x in s})
    by_id = {s.span_id: s for s in spans}
    tool = only(spans, "execute_tool invoke")  # the helper answers without code
    for name in ("helper", "fake-echo", "fake-env", "http"):
        assert only(spans, name).parent_id == tool.span_id, name
    assert by_id[tool.parent_id].name == "agent" and len({s.trace_id for s in spans}) == 1
    assert only(spans, "fake-echo").attributes["agentapps.skill.uri"] == "mcp://fake/echo"
    http = only(spans, "http")
    assert seen[0]["traceparent"].startswith(f"00-{http.trace_id}-{http.span_id}-")
    assert SECRET not in b"".join(otlp.bodies).decode("utf-8", "replace")


def test_mcp_server_over_http_joins_the_trace_of_a_requests_traceparent(project, otlp):
    import os
    import signal
    import socket
    import time

    project.write("greet.skill.py", 'frontmatter = {"name": "greet"}\n\ndef run(ctx, args):\n    return "hi"\n')
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "mcp-server", "--transport", "http", "--port",
                             str(port)], cwd=project.root, env=project.env(**otel_env(otlp)),
                            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        deadline = time.monotonic() + 30
        with httpx2.Client(timeout=20) as client:
            while True:
                try:
                    hello = client.post(url, headers=headers, json={
                        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                            "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"}}})
                    break
                except httpx2.TransportError:
                    assert time.monotonic() < deadline, "the MCP server did not come up"
                    time.sleep(0.05)
            assert hello.status_code == 200, hello.text
            version = "2025-06-18"
            session = {k: v for k, v in (("mcp-session-id", hello.headers.get("mcp-session-id")),
                                         ("mcp-protocol-version", version)) if v}
            client.post(url, headers={**headers, **session},
                        json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            called = client.post(url, headers={**headers, **session, "traceparent": TRACEPARENT}, json={
                "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet", "arguments": {}}})
            assert called.status_code == 200 and '"hi"' in called.text.replace("\\", ""), called.text
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=15)
    spans = otlp.wait_for(lambda s: any(x.name == "greet" for x in s))
    greet = only(spans, "greet")
    assert (greet.trace_id, greet.parent_id, greet.kind) == (TRACE_ID, PARENT_ID, "SERVER")


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
@pytest.mark.parametrize("value", ["localhost:4318", "not a url", "ftp://collector", "http://[::1", "http://h:port"])
def test_an_endpoint_that_is_not_an_http_url_is_one_line_naming_the_variable_and_the_run_succeeds(
        project, variable, value):
    project.write("noop.skill.py", 'frontmatter = {"name": "noop"}\n\ndef run(ctx, args):\n    return "ok"\n')
    code = ("import sys, json\nfrom agentapps.cli import main\n"
            "try:\n    main(['run', 'noop'])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry')))\n")
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=project.root,
                            env=project.env(**{variable: value}), capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[0] == "ok", result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []  # the SDK was not even started
    (line,) = result.stderr.splitlines()
    assert f"{variable} is {value!r}" in line and "not an http:// or https:// URL" in line


def test_a_workers_run_of_an_event_joins_the_trace_of_the_call_that_emitted_it(redis_project, otlp):  # noqa: F811
    project = redis_project.project
    project.write("producer.skill.py", 'frontmatter = {"name": "producer", "allowed-tools": "event-emit"}\n\n'
                  'async def run(ctx, args):\n    return (await ctx.manager.invoke("event-emit", '
                  '{"topic": "jobs", "data": 7, "store": "redis"}))["id"]\n')
    project.write("handle.skill.py", 'frontmatter = {"name": "handle", "metadata": {"params": {"type": "object", '
                  '"properties": {"event": {"type": "object"}}}}}\n\n'
                  'def run(ctx, args):\n    return args["event"]["data"] + 1\n')
    env = {"AGENTAPPS_REDIS_URL": redis_project.url, **otel_env(otlp)}
    emitted = project.cli("run", "producer", **env)
    assert emitted.returncode == 0, emitted.stderr
    handled = project.cli("worker", "jobs", "--group", "g", "--handler", "handle", "--max-events", "1", "-q",
                          real_process=True, timeout=60, **env)
    assert handled.returncode == 0, handled.stderr
    spans = otlp.wait_for(lambda s: {"producer", "event-emit", "handle"} <= {x.name for x in s})
    producer, emit, handle = only(spans, "producer"), only(spans, "event-emit"), only(spans, "handle")
    assert emit.parent_id == producer.span_id
    assert (handle.trace_id, handle.parent_id, handle.kind) == (emit.trace_id, emit.span_id, "SERVER")


def test_without_traces_an_event_carries_no_traceparent(redis_project):  # noqa: F811
    project = redis_project.project
    emitted = project.cli("run", "--json", "event-emit", "--topic", "jobs", "--data", "1", "--store", "redis",
                          AGENTAPPS_REDIS_URL=redis_project.url)
    assert emitted.returncode == 0, emitted.stderr
    assert "traceparent" not in json.loads(emitted.stdout)["result"]


def test_a_tool_of_a_stdio_mcp_server_joins_the_callers_trace_through_meta(project, otlp, tmp_path):
    """The caller sends its MCP tool call's `traceparent` in the request's `_meta` (MCP SEP-414);
    `agentapps mcp-server` over stdio, which has no headers, joins the trace from there."""
    project.write("greet.skill.py", 'frontmatter = {"name": "greet"}\n\ndef run(ctx, args):\n    return "hi"\n')
    caller = tmp_path / "caller"
    (caller / ".agent-apps").mkdir(parents=True)
    server = {"command": sys.executable, "args": ["-m", "agentapps", "mcp-server"], "cwd": str(project.root),
              "env": otel_env(otlp, OTEL_SERVICE_NAME="served")}
    main = {"role": "main", "mcp": {"peer": server}, "sandbox": "off"}
    (caller / "main.skill.md").write_text(f"---\nname: main\nmetadata: {json.dumps(main)}\n---\n")
    (caller / "ask.skill.py").write_text('frontmatter = {"name": "ask", "allowed-tools": "peer-greet"}\n\n'
                                         'async def run(ctx, args):\n'
                                         '    return await ctx.manager.invoke("peer-greet", {})\n')
    result = project.cli("run", "ask", cwd=caller, **otel_env(otlp))
    assert result.returncode == 0 and result.stdout == "hi\n", result.stderr
    spans = otlp.wait_for(lambda s: {"ask", "peer-greet", "greet"} <= {x.name for x in s})
    tool, greet = only(spans, "peer-greet"), only(spans, "greet")
    assert (greet.trace_id, greet.parent_id, greet.kind) == (tool.trace_id, tool.span_id, "SERVER")
    assert greet.resource["service.name"] == "served" and tool.resource["service.name"] == "agentapps-tests"
