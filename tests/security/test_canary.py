"""A canary secret in the environment never shows up in any output channel or any file we write.

The matrix: where the secret is declared (SOURCES) × how it could leak (CHANNELS). After each run
the canary, in any of its encodings, is in neither stdout nor stderr nor any file under the
project or HOME; and each case checks that its channel really carried the redacted value.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from tests.fakes.bedrock import FakeBedrock, Reply

CANARY = 'canary-7f3a/1c9e+"secret"é'
# every form the canary could be written in; none may appear anywhere
FORMS = {CANARY, json.dumps(CANARY)[1:-1], json.dumps(CANARY, ensure_ascii=False)[1:-1], repr(CANARY)[1:-1],
         quote(CANARY, safe=""), quote_plus(CANARY), base64.b64encode(CANARY.encode()).decode().rstrip("=")}
REDACTED = "[redacted:CANARY_TOKEN]"

# where the canary is declared: by the skill served, as a string, only by a nested skill it calls,
# or only by a skill on the search path that never runs
SOURCES = {
    "served": {"env": '"env": ["CANARY_TOKEN"],', "md": "env: [CANARY_TOKEN]", "nested": False},
    "string": {"env": '"env": "CANARY_TOKEN",', "md": "env: CANARY_TOKEN", "nested": False},
    "nested": {"env": "", "md": "", "nested": True},
    "bystander": {"env": "", "md": "", "nested": False},
}

LEAK = '''
import asyncio, base64, json, logging, os, sys
from urllib.parse import quote

frontmatter = {"name": "leak", "allowed-tools": "nested state-set event-subscribe event-emit boom",
               "metadata": {ENV "session": {"key": "args.sessionId", "store": "file"},
                            "params": {"type": "object", "properties": {
                                "channel": {"type": "string"}, "sessionId": {"type": "string"}}}}}


async def run(ctx, args):
    value = (await ctx.manager.invoke("nested", {})) if NESTED else os.environ["CANARY_TOKEN"]
    channel = args["channel"]
    if channel == "result":
        return {"token": value, "note": "the token is " + value}
    if channel == "encoded":
        return {"url": quote(value, safe=""), "b64": base64.b64encode(value.encode()).decode(),
                "json": json.dumps({"t": value}), "repr": repr(value)}
    if channel == "state":
        await ctx.manager.invoke("state-set", {"key": "k", "value": {"t": value, value: 1}})
        return "saved"
    if channel == "event":
        await ctx.manager.invoke("event-subscribe", {"topic": "t", "ref": "boom"})
        await ctx.manager.invoke("event-emit", {"topic": "t", "data": {"t": value}})
        await asyncio.sleep(0.3)
        return "emitted"
    if channel == "print":
        print("out", value)
        print("err", value, file=sys.stderr)
        return "printed"
    if channel == "log":
        logging.getLogger("agentapps.leak").warning("log %s", value)
        return "logged"
    if channel == "bytes":
        sys.stdout.buffer.write(b"raw " + value.encode() + b"\\n")
        sys.stderr.buffer.write(b"half " + value.encode()[:4])
        sys.stderr.buffer.write(value.encode()[4:] + b" done\\n")
        return "wrote"
    raise ValueError("bad token " + value)
'''

NESTED = '''
import os
frontmatter = {"name": "nested", "metadata": {"env": ["CANARY_TOKEN"]}}

def run(ctx, args):
    return os.environ["CANARY_TOKEN"]
'''

BYSTANDER = '''
frontmatter = {"name": "bystander", "metadata": {"env": ["CANARY_TOKEN"]}}

def run(ctx, args):
    return "never run"
'''

BOOM = '''
frontmatter = {"name": "boom", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    raise RuntimeError("handler saw " + args["event"]["data"]["t"])
'''

AGENT = '''---
name: NAME
allowed-tools: leak
metadata:
  ENV
  MODEL
---
Echo the token.
'''

JS_CANARY = json.dumps(CANARY)
TURNS = [{"text": f"I see {CANARY}",
          "code": f"memory.t = {JS_CANARY}; return await ctx.manager.invoke('leak', {{channel: 'result'}})"},
         {"text": f"Done: {CANARY}"}]


def _write_project(project: Any, outside: Path, source: str) -> None:
    spec = SOURCES[source]
    project.write("leak.skill.py", LEAK.replace("ENV", spec["env"]).replace("NESTED", str(spec["nested"])))
    project.write("nested.skill.py", NESTED)
    project.write("boom.skill.py", BOOM)
    if source == "bystander":
        project.write("bystander.skill.py", BYSTANDER)
    script = outside / "turns.json"  # the scripted model's lines hold the canary: keep them elsewhere
    script.write_text(json.dumps({"turns": TURNS}))
    scripted = f"model: {{agent: agent-scripted, script: {json.dumps(str(script))}}}"
    for name, model in (("echo", scripted), ("ask", "")):
        text = AGENT.replace("NAME", name).replace("ENV", spec["md"]).replace("MODEL", model)
        project.write(f"{name}.skill.md", text)


@pytest.fixture
def bedrock(tmp_path: Path) -> Any:
    """A loopback fake Bedrock streaming the canary split across two deltas, and the env to reach it."""
    aws = tmp_path / "aws"
    aws.mkdir()
    for name in ("config", "credentials"):
        (aws / name).write_text("")
    split = len(CANARY) // 2
    fake = FakeBedrock([Reply(text=[f"I see {CANARY[:split]}", f"{CANARY[split:]} here."])]).start()
    yield {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.endpoint_url, "AWS_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEFAKEKEY00", "AWS_SECRET_ACCESS_KEY": "fake-secret",
           "AWS_CONFIG_FILE": str(aws / "config"), "AWS_SHARED_CREDENTIALS_FILE": str(aws / "credentials"),
           "AWS_EC2_METADATA_DISABLED": "true"}
    fake.close()


def _leaks(text: str) -> list[str]:
    return [form for form in FORMS if form in text]


def _files_with_canary(*roots: Path) -> list[str]:
    found = []
    for base in roots:
        for folder, _, files in os.walk(base):
            for name in files:
                data = Path(folder, name).read_bytes().decode("utf-8", "replace")
                if _leaks(data):
                    found.append(os.path.join(folder, name))
    return found


def _state(project: Any) -> str:
    return (project.root / ".agent-apps" / "state" / "k.json").read_text()


def _session(project: Any) -> str:
    return (project.root / ".agent-apps" / "sessions" / "s1.json").read_text()


# channel: (argv, exit code, where the redacted value must show up)
CHANNELS: dict[str, tuple[list[str], int, Any]] = {
    "stdout": (["leak", "--channel", "result"], 0, lambda r, p: REDACTED in r.stdout),
    "--json": (["--json", "leak", "--channel", "result"], 0,
               lambda r, p: json.loads(r.stdout)["result"]["token"] == REDACTED),
    "encodings": (["--json", "leak", "--channel", "encoded"], 0,
                  lambda r, p: all(REDACTED in v for v in json.loads(r.stdout)["result"].values())),
    "state": (["leak", "--channel", "state"], 0, lambda r, p: REDACTED in _state(p)),
    "session": (["leak", "--channel", "result", "--session-id", "s1"], 0, lambda r, p: REDACTED in _session(p)),
    "event handler error": (["leak", "--channel", "event"], 0,
                            lambda r, p: f"handler saw {REDACTED}" in r.stderr),
    "print and logging": (["leak", "--channel", "print"], 0,
                          lambda r, p: f"out {REDACTED}" in r.stderr and f"err {REDACTED}" in r.stderr and r.stdout == "printed\n"),
    "log record": (["leak", "--channel", "log"], 0, lambda r, p: f"warning: log {REDACTED}" in r.stderr),
    "sys.stdout.buffer, secret split over two writes": (
        ["leak", "--channel", "bytes"], 0,
        lambda r, p: f"raw {REDACTED}" in r.stderr and f"half {REDACTED} done" in r.stderr and r.stdout == "wrote\n"),
    "error": (["leak", "--channel", "error"], 1, lambda r, p: f"bad token {REDACTED}" in r.stderr),
    "-v traceback": (["-v", "leak", "--channel", "error"], 1,
                     lambda r, p: "Traceback" in r.stderr and f"bad token {REDACTED}" in r.stderr),
    "--json error": (["--json", "leak", "--channel", "error"], 1,
                     lambda r, p: REDACTED in json.loads(r.stdout)["error"]["message"]),
    "model echo (progress)": (["echo"], 0, lambda r, p: f"I see {REDACTED}" in r.stderr
                              and r.stdout == f"Done: {REDACTED}\n"),
    "--record": (["--record", "rec.json", "echo"], 0,
                 lambda r, p: REDACTED in (p.root / "rec.json").read_text()),
    "streamed model text": (["--model", "us.test", "ask"], 0,
                            lambda r, p: f"I see {REDACTED} here." in r.stderr),
}

CASES = [(s, c) for s in SOURCES for c in CHANNELS]


@pytest.mark.parametrize(("source", "channel"), CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_canary_never_leaks(project, tmp_path, bedrock, source, channel):
    outside = tmp_path / "outside"
    outside.mkdir()
    _write_project(project, outside, source)
    argv, code, shown = CHANNELS[channel]
    result = project.cli("run", *argv, CANARY_TOKEN=CANARY, **bedrock)
    assert result.returncode == code, result.stderr
    assert _leaks(result.stdout) == [] and _leaks(result.stderr) == []
    assert _files_with_canary(project.root, project.home) == []
    assert shown(result, project), (result.stdout, result.stderr)


def test_undeclared_variables_are_never_expanded(project):
    project.write("undeclared.skill.md", "---\nname: undeclared\n---\nToken: :env[CANARY_TOKEN]\n")
    result = project.cli("run", "--dry-run", "undeclared", CANARY_TOKEN=CANARY)
    assert result.returncode == 3 and _leaks(result.stdout + result.stderr) == []
    assert "may not read environment variable 'CANARY_TOKEN'" in result.stderr


def test_values_shorter_than_four_characters_are_not_redacted(project):
    project.write("short.skill.py", '''
        import os
        frontmatter = {"name": "short", "metadata": {"env": ["SHORT_ONE"]}}

        def run(ctx, args):
            return "value " + os.environ["SHORT_ONE"]
        ''')
    assert project.cli("run", "short", SHORT_ONE="abc").stdout == "value abc\n"
    assert project.cli("run", "short", SHORT_ONE="abcd").stdout == "value [redacted:SHORT_ONE]\n"


def test_a_declared_secret_is_never_used_as_a_state_or_session_key(project):
    secret = "s3cr3t-CANARY-Vx9/+Qz"
    project.write("keyed.skill.py", '''
import os
frontmatter = {"name": "keyed", "metadata": {"env": ["CANARY_TOKEN"], "params": {"type": "object"}}}

async def run(ctx, args):
    return await ctx.manager.invoke("state-set", {"key": "k-" + os.environ["CANARY_TOKEN"], "value": 1})
''')
    result = project.cli("run", "keyed", CANARY_TOKEN=secret)
    assert result.returncode == 3 and "declared secret" in result.stderr and secret not in result.stderr
    leaked = [p for p in project.root.rglob("*") if "CANARY" in p.name or (p.is_file() and secret in p.read_text(errors="replace"))]
    assert leaked == []


FILE_NAMES = {  # where the secret sits in the path file-write is asked for (TOK stands for it)
    "the file name": "out/TOK.txt",
    "part of a file name": "notes-TOK.md",
    "a folder on the way": "TOK/notes.txt",
    "reached through ..": "docs/../TOK",
    "URL-encoded": "QTOK.txt",
    "in base64": "BTOK.txt",
    "a skill file's name": "skills/TOK.skill.py",
}


@pytest.mark.parametrize("case", list(FILE_NAMES), ids=list(FILE_NAMES))
def test_file_write_never_makes_a_declared_secret_a_file_or_folder_name(project, case):
    secret = "s3cr3t-CANARY-Vx9+Qz!"
    project.write("namer.skill.py", '''
import base64, os
from urllib.parse import quote
frontmatter = {"name": "namer", "allowed-tools": "file-write",
               "metadata": {"env": ["CANARY_TOKEN"], "params": {"type": "object"}}}

async def run(ctx, args):
    token = os.environ["CANARY_TOKEN"]
    path = args["path"].replace("QTOK", quote(token, safe="")).replace(
        "BTOK", base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")).replace("TOK", token)
    return await ctx.manager.invoke("file-write", {"path": path, "content": "x"})
''')
    result = project.cli("run", "namer", "--path", FILE_NAMES[case], CANARY_TOKEN=secret)
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.splitlines()
    assert "declared secret" in line and secret not in line
    made = sorted(str(p.relative_to(project.root)) for p in project.root.rglob("*")
                  if ".agent-apps" not in p.parts and p.name != "namer.skill.py")
    assert made == [], made


# what could carry the canary into a span: an error's message (the span's status), the model's
# text and the agent's code (model and tool spans), a skill's result
SPAN_CASES = {"error": (["leak", "--channel", "error"], 1, "leak"), "model echo": (["echo"], 0, "chat"),
              "result": (["leak", "--channel", "result"], 0, "leak")}


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("case", list(SPAN_CASES))
def test_canary_never_reaches_an_exported_span(project, tmp_path, source, case):
    """Through the real OTLP/HTTP exporter to a loopback receiver: the bytes on the wire hold no
    form of the canary, and the spans that could have carried it did arrive."""
    from tests.fakes.otlp import FakeOtlp

    outside = tmp_path / "outside"
    outside.mkdir()
    _write_project(project, outside, source)
    argv, code, expected = SPAN_CASES[case]
    with FakeOtlp() as otlp:
        result = project.cli("run", *argv, CANARY_TOKEN=CANARY, OTEL_EXPORTER_OTLP_ENDPOINT=otlp.endpoint)
        assert result.returncode == code, result.stderr
        spans = otlp.wait_for(lambda s: any(x.name.startswith(expected) for x in s))
    wire = b"".join(otlp.bodies).decode("utf-8", "replace")
    assert _leaks(wire) == []
    if case == "error":
        (leak,) = [s for s in spans if s.name == "leak"]
        assert f"bad token {REDACTED}" in leak.status_message
