"""Shared fixtures: every test runs in a temporary project with its own HOME and .agent-apps/."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli as cli_runner

REPO = Path(__file__).resolve().parent.parent
pytest_plugins = ["tests.support.attacks"]  # the attack suite's tally: tried/held per class
# Tests here keep the real process for every `Project.cli` call: their owners move them to the
# in-process runner (and mark the calls that need a process with `real_process=True`) themselves.
REAL_PROCESS_ONLY = ("tests/core/", "tests/context/", "tests/process/", "tests/tools/test_policy.py",
                     "tests/security/test_shell_rules.py", "tests/security/test_approval_scope.py")


@dataclass
class Project:
    root: Path
    home: Path
    real_process_only: bool = False  # see REAL_PROCESS_ONLY

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def env(self, **extra: str) -> dict[str, str]:
        env = _environment(self.home)  # state: under HOME
        env.update(extra)
        return env

    def cli(self, *args: str, input: str | None = None, cwd: Path | None = None, timeout: float = 60,
            real_process: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
        """`agentapps ARGS` in this project with `env` added, stdin `input`: stdout, stderr and the
        exit code. It runs in this process (tests/support/cli.py) unless `real_process` asks for a
        real `python -m agentapps` (signals, ptys, concurrency, crashes, imports, hard exits)."""
        run = cli_runner.real_process if real_process or self.real_process_only else cli_runner.in_process
        return run(args, env=self.env(**env), cwd=cwd or self.root, input=input, timeout=timeout)

    def boot(self) -> Any:
        from agentapps.boot import bootstrap

        return bootstrap(self.root)

    def invoke(self, ref: str, args: dict[str, Any] | None = None, root: Any = None) -> Any:
        from agentapps.context.manager import invoke_root

        root = root or self.boot()
        return asyncio.run(invoke_root(root, ref, args or {}))


def pytest_configure(config: pytest.Config) -> None:
    # A suite started as a background job of a script (`.ci/run &`, nohup) inherits SIGINT and
    # SIGQUIT ignored, and nohup adds SIGHUP; every process a test starts would inherit that too, and
    # the tests that press Ctrl-C or stop a server with SIGINT would see nothing happen. The suite
    # gives its processes the dispositions of a shell in the foreground (each xdist worker runs this).
    for number, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL),
                            (signal.SIGHUP, signal.SIG_DFL)):
        if signal.getsignal(number) == signal.SIG_IGN:
            signal.signal(number, handler)
    config.addinivalue_line("markers", "cold_cache: the test's HOME starts without the user cache a first run "
                                       "writes (the index of the bundled skills), as a new user's does")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules holding a `slow` test run first. Each module runs whole on one xdist worker
    (`--dist loadscope`), so a long module handed out last would keep one worker busy while the
    others sit idle; started first, it overlaps with the many short ones."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)  # stable: each module's own order stays


@pytest.fixture(autouse=True)
def _no_spare_sandbox_left_behind() -> Iterator[None]:
    """A test that served runs in this process (a `serve` app, say) leaves it keeping a spare
    sandbox process (agentapps.sandbox.pool); the next test starts as a fresh process would."""
    yield
    pool = sys.modules.get("agentapps.sandbox.pool")
    if pool is not None and pool.warm():
        pool.keep_warm(False)


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENTAPPS_", "AWS_", "OPENAI_", "ANTHROPIC_", "OTEL_")) and k != "XDG_STATE_HOME"}
    env.update(HOME=str(home), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    return env


@pytest.fixture(scope="session")
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`~/.cache` as the first `agentapps` command in a new project leaves it: the index of the
    bundled skills (tools/index_cache.py). Reading and checking ~50 bundled skill files cold costs
    every test that runs the CLI about 50-100 ms; no test changes the bundled skills, so the index is
    built once, by a real `agentapps check` (which fails the session if the cold scan breaks), and
    each `project` starts with a copy. Tests of the cache itself are marked `cold_cache`."""
    base = tmp_path_factory.mktemp("user-cache")
    (base / "proj" / ".agent-apps").mkdir(parents=True)
    (base / "home").mkdir()
    done = subprocess.run([sys.executable, "-m", "agentapps", "check"], cwd=base / "proj", env=_environment(base / "home"),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    cache = base / "home" / ".cache"
    assert any((cache / "agentapps").glob("index-*.db")), "agentapps check wrote no index"
    return cache


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Project]:
    root = tmp_path / "proj"
    home = tmp_path / "home"
    (root / ".agent-apps").mkdir(parents=True)
    home.mkdir()
    if request.node.get_closest_marker("cold_cache") is None:
        shutil.copytree(request.getfixturevalue("user_cache"), home / ".cache")
    for key in list(os.environ):
        if key.startswith(("AGENTAPPS_", "OTEL_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # remembered approvals go under this HOME
    monkeypatch.chdir(root)
    from agentapps.tools.loader import RUN_STARTED

    token = RUN_STARTED.set(None)  # an earlier test's run start must not refuse this test's files
    where = Path(str(request.node.path)).resolve().relative_to(REPO).as_posix()
    yield Project(root, home, real_process_only=where.startswith(REAL_PROCESS_ONLY))
    RUN_STARTED.reset(token)
