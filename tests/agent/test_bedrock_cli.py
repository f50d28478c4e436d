"""agent-bedrock end to end: the real CLI and boto3 against the loopback fake Converse API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.bedrock import FakeBedrock, Reply

COUNT_CODE = "return await ctx.manager.invoke('wc', {text: memory.args.text})"


@pytest.fixture
def bedrock(agentic, tmp_path: Path) -> Iterator[Any]:
    """`bedrock(script)`: start a fake, return (fake, env) for CLI runs aimed at it."""
    fakes: list[FakeBedrock] = []
    (tmp_path / "aws").mkdir()
    for name in ("config", "credentials"):
        (tmp_path / "aws" / name).write_text("")
    agentic.code("wc", "len(args['text'].split())",
                 params={"type": "object", "properties": {"text": {"type": "string"}}})
    agentic.project.write("ask.skill.md", """
        ---
        name: ask
        description: Count words with a real model.
        allowed-tools: wc
        metadata:
          params: {type: object, properties: {text: {type: string}}}
        ---
        Count the words of the text with the wc skill.
        """)

    def start(script: list[Reply]) -> tuple[FakeBedrock, dict[str, str]]:
        fake = FakeBedrock(script).start()
        fakes.append(fake)
        env = {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.endpoint_url, "AWS_REGION": "us-east-1",
               "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEFAKEKEY00", "AWS_SECRET_ACCESS_KEY": "fake-secret",
               "AWS_CONFIG_FILE": str(tmp_path / "aws" / "config"),
               "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws" / "credentials"),
               "AWS_EC2_METADATA_DISABLED": "true"}
        return fake, env

    yield start
    for fake in fakes:
        fake.close()


def _tool_use(code: str, n: int = 1) -> dict[str, Any]:
    return {"toolUseId": f"tool{n}", "name": "invoke", "input": {"code": code}}


def test_streamed_text_and_a_tool_round_trip(agentic, bedrock):
    fake, env = bedrock([
        Reply(text="Let me count.", tool_uses=[_tool_use(COUNT_CODE)],
              usage={"inputTokens": 100, "outputTokens": 20}),
        Reply(text=["There are ", "three ", "words."], usage={"inputTokens": 150, "outputTokens": 5}),
    ])
    result = agentic.run("--json", "--model", "us.test-model", "ask", "--text", "a b c", **env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "There are three words."
    assert out["usage"] == {"inputTokens": 250, "outputTokens": 25, "cacheReadInputTokens": 0,
                            "cacheWriteInputTokens": 0} and out["turns"] == 2
    assert "Let me count." in result.stderr and "There are three words." in result.stderr
    assert "ok invoke" in result.stderr
    first, second = fake.requests
    assert first.model_id == "us.test-model" and first.operation == "converse-stream"
    assert "## wc" in first.body["system"][0]["text"]
    (tool,) = first.body["toolConfig"]["tools"]
    assert tool["toolSpec"]["name"] == "invoke"
    assert tool["toolSpec"]["inputSchema"]["json"]["required"] == ["code"]
    answer = second.body["messages"][-1]["content"][0]["toolResult"]
    assert answer["toolUseId"] == "tool1" and answer["status"] == "success"
    assert json.loads(answer["content"][0]["text"]) == {"ok": True, "result": 3}


def test_throttling_before_and_during_the_stream_is_retried(agentic, bedrock):
    fake, env = bedrock([Reply.http_error("ThrottlingException"),
                         Reply.mid_stream("throttlingException", after=3, text="partial words here"),
                         Reply(text="Done.")])
    result = agentic.run("ask", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n" and len(fake.requests) == 3
    assert "retrying (attempt 1" in result.stderr


def test_access_denied_exits_3_with_an_actionable_line(agentic, bedrock):
    _, env = bedrock([Reply.http_error("AccessDeniedException", "not authorized")])
    result = agentic.run("ask", **env)
    assert result.returncode == 3
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "bedrock:InvokeModelWithResponseStream" in line and "Traceback" not in result.stderr
    assert "fake-secret" not in result.stderr


def test_a_bedrock_run_can_be_recorded_and_replayed_offline(agentic, bedrock):
    _, env = bedrock([Reply(text="Counting.", tool_uses=[_tool_use(COUNT_CODE)]), Reply(text="Two.")])
    recorded = agentic.run("--record", "run.json", "ask", "--text", "a b", **env)
    assert recorded.returncode == 0, recorded.stderr
    replayed = agentic.run("--replay", "run.json", "ask", "--text", "a b")  # no AWS at all
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout == "Two.\n"


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_sigint_during_a_slow_stream_exits_130_quickly_with_no_orphans(agentic, bedrock):
    fake, env = bedrock([Reply(text=[f"word{n} " for n in range(300)], delay=0.1)])
    marker = f"AGENTAPPS_TEST_MARKER={uuid.uuid4().hex}"
    key, value = marker.split("=")
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "ask"],
                            cwd=agentic.project.root, env=agentic.project.env(**env, **{key: value}),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 20
        while not fake.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.requests, "the CLI never called the model"
        time.sleep(0.5)  # mid-stream
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert took < 2.0
    assert stdout == "" and "Interrupted" in stderr and "Traceback" not in stderr
    assert _processes_with(marker) == []
    deadline = time.monotonic() + 3
    while not fake.requests[0].aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake.requests[0].aborted  # the stream was closed, not left running


def test_no_region_anywhere_names_the_skill_and_its_model_settings(agentic, bedrock):
    _, env = bedrock([])
    env = {k: v for k, v in env.items() if k != "AWS_REGION"}
    agentic.project.write("where.skill.md", "---\nname: where\nmetadata:\n  model:\n    id: us.anthropic.claude-sonnet-4-5\n"
                          "---\nSay hi.\n")
    result = agentic.run("where", **env)
    assert result.returncode == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert line.startswith(f"error: {agentic.project.root / 'where.skill.md'}:4: No AWS region for Bedrock"), line
    failed = json.loads(agentic.run("--json", "where", **env).stdout)
    assert failed["error"]["skill"] == "where" and failed["error"]["line"] == 4


@pytest.mark.parametrize("chosen_by", ["skill", "main", "both, spelled apart"])
def test_aws_credentials_sign_only_requests_to_an_endpoint_the_project_chose(agentic, bedrock, chosen_by):
    # a skill naming its own endpointUrl (a copied folder, an installed package) must not receive a
    # SigV4 signature, the access key id or the session token; the main skill's endpoint does
    _, env = bedrock([])
    own, _ = bedrock([Reply(text="done")])
    where = "ask.skill.md" if chosen_by == "skill" else "main.skill.md"
    if chosen_by == "skill":
        agentic.project.write(where, (agentic.project.root / where).read_text().replace(
            "metadata:\n", f"metadata:\n  model: {{endpointUrl: '{own.endpoint_url}'}}\n", 1))
    else:
        agentic.project.write(where, f"---\nname: main\nmetadata:\n  role: main\n  model: {{endpointUrl: '{own.endpoint_url}'}}\n---\nMain.\n")
    if chosen_by == "both, spelled apart":  # the skill names the project's endpoint another way
        respelled = own.endpoint_url.replace("http://", "HTTP://").rstrip("/") + "/"
        agentic.project.write("ask.skill.md", (agentic.project.root / "ask.skill.md").read_text().replace(
            "metadata:\n", f"metadata:\n  model: {{endpointUrl: '{respelled}'}}\n", 1))
    result = agentic.run("--json", "--model", "us.test-model", "ask", "--text", "a b c",
                         **env, AWS_SESSION_TOKEN="session-token-canary-41")
    assert result.returncode == 0, result.stderr
    [request] = own.requests
    sent = " ".join(f"{k}: {v}" for k, v in request.headers.items())
    if chosen_by == "skill":
        assert "authorization" not in request.headers and "x-amz-security-token" not in request.headers
        assert "AKIDEXAMPLEFAKEKEY00" not in sent and "session-token-canary-41" not in sent
    else:
        assert "AKIDEXAMPLEFAKEKEY00" in request.headers["authorization"]
        assert request.headers["x-amz-security-token"] == "session-token-canary-41"
