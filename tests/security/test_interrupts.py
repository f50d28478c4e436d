"""Interrupts and deadlines with real processes: exit codes, timing, and no orphaned children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SLEEPY = '''
import asyncio, time
frontmatter = {"name": "sleepy", "allowed-tools": "shell", "metadata": {"params": {"type": "object"}}}

async def run(ctx, args):
    mode = args.get("mode", "async")
    if mode != "shell":
        open("sleeping", "w").write("yes")  # the test signals once this is there
    if mode == "async":
        await asyncio.sleep(30)
    elif mode == "blocking":
        time.sleep(30)
    elif mode == "shell":
        return await ctx.manager.invoke("shell", {"command": "echo $$ > child.pid; sleep 30", "timeout": 60})
'''


def start(project, *argv):
    env = project.env()
    return subprocess.Popen([sys.executable, "-m", "agentapps", "run", *argv], cwd=project.root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_file(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass
    found, todo = [], [pid]
    while todo:
        above = todo.pop()
        below = [p for p, parent in parents.items() if parent == above]
        found += below
        todo += below
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("mode", ["async", "blocking", "shell"])
def test_signal_stops_the_run_within_two_seconds(project, sig, code, mode):
    project.write("sleepy.skill.py", SLEEPY)
    proc = start(project, "sleepy", "--mode", mode)
    if mode == "shell":
        wait_for_file(project.root / "child.pid")
        # our pid for it, found from the run's process (inside the OS sandbox, `$$` is its namespace's)
        [child] = [p for p in descendants(proc.pid) if cmdline(p).startswith("sleep 30")]
    else:
        wait_for_file(project.root / "sleeping")  # it reached the sleep (not a fixed 1.0 s)
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 2.0
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1].startswith("error:")
    if mode == "shell":
        time.sleep(0.2)
        assert not alive(child)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "blocking", "shell"])
def test_timeout_exits_4(project, mode):
    project.write("sleepy.skill.py", SLEEPY)
    started = time.monotonic()
    result = project.cli("run", "--timeout", "0.5", "sleepy", "--mode", mode, real_process=True)
    assert result.returncode == 4, result.stderr
    assert "--timeout 0.5 s" in result.stderr
    assert time.monotonic() - started < 8


def test_bad_timeout_values_are_usage_errors(project):
    for value in ("0", "-1", "soon"):
        result = project.cli("run", "--timeout", value, "hello")
        assert result.returncode == 2 and "--timeout" in result.stderr
