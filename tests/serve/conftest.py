"""`agentapps serve` under test: real server processes, driven over HTTP with httpx2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

REDIS_URL = os.environ.get("AGENTAPPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
REQUIRE_REDIS = os.environ.get("AGENTAPPS_REQUIRE_REDIS") == "1"  # read now: test projects drop AGENTAPPS_*


@dataclass
class Served:
    """One `agentapps serve` process."""

    proc: subprocess.Popen[str]
    url: str
    lines: list[str] = field(default_factory=list)

    def client(self, token: str | None = None, **kw: Any) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx2.Client(base_url=self.url, headers=headers, timeout=kw.pop("timeout", 20), **kw)

    def stop(self, sig: int = 15) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, "".join(self.lines) + (err or "")


def start(project: Any, *argv: str, env: dict[str, str] | None = None, wait: float = 30,
          first: str = "") -> Served:
    """`agentapps serve --port 0 ARGV` in `project`; returns once it says where it listens. `first`
    is Python the server's process runs before the command (to widen a timing window, say)."""
    command = f"{first}\nfrom agentapps.cli import main\nmain()"
    proc = subprocess.Popen([sys.executable, "-c", command, "serve", "--port", "0", *argv],
                            cwd=project.root, env=project.env(**(env or {})), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    deadline = time.monotonic() + wait
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(r"serving (http://\S+)/", line)
        if found:
            return Served(proc, found.group(1), lines)
    proc.kill()
    raise AssertionError("the server did not start: " + "".join(lines) + (proc.stderr.read() or ""))


def events(response: httpx2.Response) -> Iterator[tuple[str, Any]]:
    """Server-sent events as (name, parsed data); comments (keep-alives) are skipped."""
    name, data = "message", []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)


def make_project(root: Any) -> Any:
    from tests.conftest import Project

    project = Project(root / "proj", root / "home")
    (project.root / ".agent-apps").mkdir(parents=True)
    project.home.mkdir()
    return project


@pytest.fixture(scope="module")
def module_project(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_project(tmp_path_factory.mktemp("serve"))


def redis_or_skip() -> Any:
    """A client of the test Redis, or a skip (a failure when AGENTAPPS_REQUIRE_REDIS=1, as in CI)."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        client.ping()
    except redis.RedisError as exc:
        if REQUIRE_REDIS:
            raise AssertionError(f"Redis is required (AGENTAPPS_REQUIRE_REDIS=1) but {REDIS_URL} fails: {exc}") from exc
        pytest.skip(f"no Redis at {REDIS_URL}: {exc}")
    return client
