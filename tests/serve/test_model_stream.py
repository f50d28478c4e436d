"""A streaming model behind `/chat`: the model's text deltas reach the client as `text-delta` events,
in order, before the whole message. agent-bedrock against the loopback fake Converse API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.bedrock import FakeBedrock, Reply
from tests.serve.conftest import Served, events, start
from tests.serve.skills import GREET

CODE = "return await ctx.manager.invoke('greet', {name: 'Ada'})"


@pytest.fixture
def fake() -> Iterator[FakeBedrock]:
    bedrock = FakeBedrock([
        Reply(text=["Let me ", "greet ", "Ada."],
              tool_uses=[{"toolUseId": "tool1", "name": "invoke", "input": {"code": CODE}}]),
        Reply(text=["She was ", "greeted."]),
    ]).start()
    yield bedrock
    bedrock.close()


@pytest.fixture
def served(project: Any, fake: FakeBedrock, tmp_path: Path) -> Iterator[Served]:
    (tmp_path / "aws").mkdir()
    for name in ("config", "credentials"):
        (tmp_path / "aws" / name).write_text("")
    project.write("greet.skill.py", GREET)
    metadata = {"model": {"agent": "agent-bedrock", "id": "us.test-model"}, "params": {"type": "object"}}
    project.write("hello.skill.md", "---\nname: hello\ndescription: Greets with a real model.\n"
                                    f"allowed-tools: greet\nmetadata: {json.dumps(metadata)}\n---\nGreet Ada.\n")
    server = start(project, env={
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.endpoint_url, "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEFAKEKEY00", "AWS_SECRET_ACCESS_KEY": "fake-secret",
        "AWS_CONFIG_FILE": str(tmp_path / "aws" / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws" / "credentials"), "AWS_EC2_METADATA_DISABLED": "true"})
    yield server
    server.stop()


def test_model_text_deltas_are_streamed_as_they_arrive(served, fake):
    with served.client() as client, client.stream("POST", "/chat", json={"skill": "hello"}) as response:
        assert response.status_code == 200
        got = list(events(response))
    names = [name for name, _ in got]
    assert names[0] == "stream-start" and names[-1] == "result", names
    deltas = [data["text"] for name, data in got if name == "text-delta"]
    assert deltas == ["Let me ", "greet ", "Ada.", "She was ", "greeted."]
    assert "agent-message" not in names  # the text is not sent a second time as a whole message
    # each turn's pieces come before the tool call of that turn and before the end of the turn
    first_turn = names[:names.index("turn-end")]
    assert [n for n in first_turn if n in ("text-delta", "tool-call")] == ["text-delta"] * 3 + ["tool-call"]
    assert got[-1][1]["result"] == "She was greeted." and got[-1][1]["turns"] == 2
    assert len(fake.requests) == 2 and fake.requests[0].operation == "converse-stream"
