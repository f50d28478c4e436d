"""Agent test helpers: markdown skills played by agent-scripted, code skills, the requests log."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class Agentic:
    """A temporary project plus shortcuts for agent runs selected the way users select them."""

    project: Any  # tests/conftest.py's Project

    @property
    def requests_path(self) -> Any:
        return self.project.root / "requests.jsonl"

    def skill(self, name: str, turns: list[dict[str, Any]] | None, *, allowed: str | None = None,
              returns: dict[str, Any] | None = None, model: dict[str, Any] | None = None,
              params: dict[str, Any] | None = None, body: str = "Do the task.",
              meta: dict[str, Any] | None = None) -> None:
        """A markdown skill whose model is agent-scripted playing `turns` (None: no script key)."""
        config: dict[str, Any] = {"agent": "agent-scripted", "requests": str(self.requests_path),
                                  "snippetTimeout": 2}
        if turns is not None:
            self.project.write(f"{name}.turns.json", json.dumps({"turns": turns}))
            config["script"] = f"{name}.turns.json"
        config.update(model or {})
        metadata: dict[str, Any] = {"model": config, **(meta or {})}
        if params is not None:
            metadata["params"] = params
        if returns is not None:
            metadata["returns"] = returns
        lines = ["---", f"name: {name}", "description: An agent skill under test."]
        if allowed is not None:
            lines.append(f"allowed-tools: {json.dumps(allowed)}")
        lines += [f"metadata: {json.dumps(metadata)}", "---", body, ""]
        self.project.write(f"{name}.skill.md", "\n".join(lines))

    def code(self, name: str, source: str, *, params: dict[str, Any] | None = None,
             meta: dict[str, Any] | None = None) -> None:
        """A code skill `run(ctx, args)` whose body is `source` (an expression is returned)."""
        metadata = {"params": params or {"type": "object"}, **(meta or {})}
        fm = {"name": name, "description": f"Test skill {name}.", "metadata": metadata}
        body = source if "return" in source or "\n" in source else f"return {source}"
        text = f"frontmatter = {fm!r}\n\nasync def run(ctx, args):\n"
        text += "".join(f"    {line}\n" for line in body.splitlines())
        self.project.write(f"{name}.skill.py", text)

    def run(self, *argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.project.cli("run", *argv, **kw)

    def requests(self) -> list[dict[str, Any]]:
        """What the scripted model received, one entry per turn."""
        if not self.requests_path.exists():
            return []
        return [json.loads(line) for line in self.requests_path.read_text().splitlines()]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool result the model was shown, parsed (denials as {"denied": text})."""
        out = []
        for request in self.requests():
            for item in request["input"]:
                if isinstance(item, dict):
                    text = item["text"]
                    out.append({"denied": text} if text.startswith("Denied:") else json.loads(text))
        return out

    def messages(self) -> list[str]:
        """Every plain-text message the model was sent after the first (reminders, continues)."""
        return [i for r in self.requests()[1:] for i in r["input"] if isinstance(i, str)]


@pytest.fixture
def agentic(project: Any) -> Iterator[Agentic]:
    yield Agentic(project)


@pytest.fixture
def aws(tmp_path: Any) -> Iterator[Any]:
    """`aws(script, meter=None)`: start a fake Bedrock; returns (fake, env) for CLI runs aimed at it."""
    from tests.fakes.bedrock import FakeBedrock

    fakes: list[Any] = []
    folder = tmp_path / "aws"
    folder.mkdir()
    for name in ("config", "credentials"):
        (folder / name).write_text("")

    def start(script: list[Any], meter: Any = None) -> tuple[Any, dict[str, str]]:
        fake = FakeBedrock(script, meter=meter).start()
        fakes.append(fake)
        return fake, {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.endpoint_url, "AWS_REGION": "us-east-1",
                      "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEFAKEKEY00", "AWS_SECRET_ACCESS_KEY": "fake-secret",
                      "AWS_CONFIG_FILE": str(folder / "config"),
                      "AWS_SHARED_CREDENTIALS_FILE": str(folder / "credentials"),
                      "AWS_EC2_METADATA_DISABLED": "true"}

    yield start
    for fake in fakes:
        fake.close()
