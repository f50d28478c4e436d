"""--timeout and signals end a run whatever holds the interpreter: Python's `re` or native code.

Real processes, skills stuck for minutes: a backtracking `re.search` (which no Python thread can
interrupt) and `sum(range(10**13))` (which not even a signal handler can).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

STUCK = '''
import re, subprocess, sys
frontmatter = {"name": "stuck", "metadata": {"params": {"type": "object", "properties": {"how": {"type": "string"}}}}}

def run(ctx, args):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open("child.pid", "w").write(str(child.pid))
    if args["how"] == "native":
        return sum(range(10**13))  # minutes in C code that never checks for signals
    return bool(re.search(r"(a|aa)*$", "a" * 60 + "!"))  # minutes of backtracking inside re
'''


def alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


@pytest.fixture
def stuck(project):
    project.write("stuck.skill.py", STUCK)
    return project


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [False, True])
def test_timeout_fires_while_re_backtracks(stuck, as_json):
    started = time.monotonic()
    result = stuck.cli("run", *(["--json"] if as_json else []), "--timeout", "0.5", "stuck", "--how", "re",
                       timeout=30, real_process=True)
    assert time.monotonic() - started < 5
    assert result.returncode == 4, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "error: The run took longer than --timeout 0.5 s and was stopped.")
    if as_json:
        out = json.loads(result.stdout)
        assert out["ok"] is False and out["error"]["exit_code"] == 4 and out["skill"] == "stuck"
        assert out["error"]["skill"] == "stuck"  # the run it stopped
    time.sleep(0.2)
    assert not alive(int((stuck.root / "child.pid").read_text()))


@pytest.mark.slow
def test_a_run_stuck_in_native_code_is_killed_by_the_watchdog(stuck):
    started = time.monotonic()
    result = stuck.cli("run", "--json", "--timeout", "0.5", "stuck", "--how", "native", timeout=30,
                       real_process=True)
    assert time.monotonic() - started < 8
    assert result.returncode == -signal.SIGKILL  # a shell shows 137
    assert "took longer than --timeout 0.5 s" in result.stderr and "native code" in result.stderr
    out = json.loads(result.stdout)
    assert out["ok"] is False and out["error"]["exit_code"] == 137
    time.sleep(0.2)
    assert not alive(int((stuck.root / "child.pid").read_text()))  # descendants are killed first


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_backtracking_exits_within_the_grace(stuck, sig, code):
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "stuck", "--how", "re"], cwd=stuck.root,
                            env=stuck.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    pid_file = stuck.root / "child.pid"
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)  # inside the match now
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=15)
    assert time.monotonic() - sent < 2.5
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1].startswith("error:")


def test_a_run_that_finishes_dismisses_the_watchdog(project):
    project.write("quick.skill.py", 'frontmatter = {"name": "quick"}\n\ndef run(ctx, args):\n    return "done"\n')
    started = time.monotonic()
    result = project.cli("run", "--timeout", "30", "quick", real_process=True)
    assert (result.returncode, result.stdout) == (0, "done\n")
    assert time.monotonic() - started < 10  # the forked watchdog does not keep stdout open
