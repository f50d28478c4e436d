"""The real Redis server the tests use, and private ones for fault tests.

Tests that need Redis skip (saying why) when no server answers, unless AGENTAPPS_REQUIRE_REDIS=1
(CI), where a missing server fails them. Each test gets its own project name, so its keys
(`agentapps:{name}:...`) never meet another test's or another process's; they are deleted after it.
A test that kills or restarts the server starts its own (`PrivateRedis`) on a free port: the shared
one serves everybody else.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

URL = os.environ.get("AGENTAPPS_TEST_REDIS_URL") or os.environ.get("AGENTAPPS_REDIS_URL") or "redis://127.0.0.1:6379/0"
REQUIRED = os.environ.get("AGENTAPPS_REQUIRE_REDIS") == "1"


def _client(url: str = URL) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=1)


def require_server(url: str = URL) -> None:
    try:
        _client(url).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable server
        why = f"no Redis server answers at {url} ({exc})"
        if REQUIRED:
            pytest.fail(f"AGENTAPPS_REQUIRE_REDIS=1 but {why}")
        pytest.skip(f"{why}: start one (redis-server) or set AGENTAPPS_TEST_REDIS_URL")


def drop_namespace(namespace: str, url: str = URL) -> int:
    client = _client(url)
    names = list(client.scan_iter(match=f"agentapps:{namespace}:*", count=1000))
    return client.delete(*names) if names else 0


def namespace() -> str:
    return f"t-{secrets.token_hex(5)}"


@dataclass
class RedisProject:
    """A test project whose main skill names it `namespace` and keeps every store on Redis."""

    project: Any
    namespace: str
    url: str

    @property
    def root(self) -> Path:
        return self.project.root

    def env(self, **extra: str) -> dict[str, str]:
        return self.project.env(**{"AGENTAPPS_REDIS_URL": self.url, **extra})

    def cli(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        env = {"AGENTAPPS_REDIS_URL": self.url, **{k: v for k, v in kwargs.items() if k.isupper()}}
        rest = {k: v for k, v in kwargs.items() if not k.isupper()}
        return self.project.cli(*args, **rest, **env)  # type: ignore[no-any-return]

    def keys(self) -> list[str]:
        return sorted(k.decode() for k in _client(self.url).scan_iter(match=f"agentapps:{self.namespace}:*"))


def main_skill(name: str, stores: str = "{default: redis}") -> str:
    return f"---\nname: {name}\ndescription: Test project.\nmetadata:\n  role: main\n  stores: {stores}\n---\nMain.\n"


@pytest.fixture
def redis_url() -> str:
    require_server()
    return URL


@pytest.fixture
def redis_project(project: Any, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[RedisProject]:
    name = namespace()
    project.write("main.skill.md", main_skill(name))
    monkeypatch.setenv("AGENTAPPS_REDIS_URL", redis_url)
    try:
        yield RedisProject(project, name, redis_url)
    finally:
        drop_namespace(name, redis_url)


class PrivateRedis:
    """A redis-server of the test's own on a free port, with an append-only file synced on every
    write (so a restart keeps what it acknowledged), which the test may kill and restart."""

    def __init__(self, folder: Path, *extra: str) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if REQUIRED:
                pytest.fail("AGENTAPPS_REQUIRE_REDIS=1 but there is no redis-server binary to start")
            pytest.skip("no redis-server binary to start a private server")
        self.binary, self.folder, self.extra = binary, folder, extra
        folder.mkdir(parents=True, exist_ok=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> PrivateRedis:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--appendfsync", "always", "--dir", str(self.folder), *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(64).startswith((b"+PONG", b"-NOAUTH")):
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port} did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        self.kill()
