"""Shared fixtures: every test runs in a temporary project with its own HOME and .agent-apps/."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
pytest_plugins = ["tests.support.attacks"]  # the attack suite's tally: tried/held per class


@dataclass
class Project:
    root: Path
    home: Path

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AGENTAPPS_", "AWS_")) and k != "XDG_STATE_HOME"}  # state: under HOME
        env.update(HOME=str(self.home), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
        env.update(extra)
        return env

    def cli(self, *args: str, input: str | None = None, cwd: Path | None = None,
            timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
        """Run the real CLI in a subprocess, the way a user would."""
        return subprocess.run(  # noqa: PLW1510 - the exit code is what tests assert on
            [sys.executable, "-m", "agentapps", *args],
            cwd=cwd or self.root, env=self.env(**env), input=input if input is not None else "",
            capture_output=True, text=True, timeout=timeout,
        )

    def boot(self) -> Any:
        from agentapps.boot import bootstrap

        return bootstrap(self.root)

    def invoke(self, ref: str, args: dict[str, Any] | None = None, root: Any = None) -> Any:
        from agentapps.context.manager import invoke_root

        root = root or self.boot()
        return asyncio.run(invoke_root(root, ref, args or {}))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    root = tmp_path / "proj"
    home = tmp_path / "home"
    (root / ".agent-apps").mkdir(parents=True)
    home.mkdir()
    for key in list(os.environ):
        if key.startswith("AGENTAPPS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # remembered approvals go under this HOME
    monkeypatch.chdir(root)
    from agentapps.tools.loader import RUN_STARTED

    token = RUN_STARTED.set(None)  # an earlier test's run start must not refuse this test's files
    yield Project(root, home)
    RUN_STARTED.reset(token)
