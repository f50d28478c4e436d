"""A code skill's run is driven without an event loop when nothing in it waits; a call that waits
gets the lent loop; signals and --timeout still stop a driven run, with its cleanup. Which skills
need the loop: test_loopscan.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.support.waiting import wait_for

SLOW = '''
import time
from pathlib import Path

frontmatter = {"name": "slow", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    try:
        Path("looping").write_text("yes")
        while True:
            time.sleep(0.01)
    finally:
        Path("cleaned-up").write_text("yes")
'''

PARENT = '''
frontmatter = {"name": "parent", "allowed-tools": "shell", "metadata": {"params": {"type": "object"}}}

async def run(ctx, args):
    first = await ctx.manager.invoke("shell", {"command": "echo one"})
    second = await ctx.manager.invoke("shell", {"command": "echo two"})
    return [first["stdout"].strip(), second["stdout"].strip()]
'''


def test_a_plain_code_skill_runs_without_importing_asyncio(project):
    project.write("noop.skill.py", 'frontmatter = {"name": "noop"}\n\ndef run(ctx, args):\n    return "ok"\n')
    code = ("import sys\nfrom agentapps.cli import main\ntry:\n    main(['run', 'noop'])\nexcept SystemExit:\n"
            "    pass\nprint('asyncio' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=project.root, env=project.env(), capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.stdout.splitlines() == ["ok", "False"], out.stderr


def test_calls_that_wait_get_the_lent_loop_one_after_another(project):
    project.write("parent.skill.py", PARENT)
    result = project.cli("run", "--json", "parent")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == ["one", "two"]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_driven_run_and_its_cleanup_runs(project, sig, code):
    project.write("slow.skill.py", SLOW)
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "slow"], cwd=project.root,
                            env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (project.root / "looping").exists(), what="the run to start looping")
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == code, err
    assert time.monotonic() - sent < 2.5
    assert (project.root / "cleaned-up").read_text() == "yes"


def test_the_timeout_stops_a_driven_run_with_exit_4_and_its_cleanup_runs(project):
    project.write("slow.skill.py", SLOW)
    started = time.monotonic()
    result = project.cli("run", "--timeout", "0.5", "slow")
    assert result.returncode == 4 and "--timeout 0.5" in result.stderr
    assert time.monotonic() - started < 5
    assert (project.root / "cleaned-up").read_text() == "yes"


def test_a_signal_during_a_lent_call_kills_its_children(project):
    project.write("parent.skill.py", PARENT.replace("echo one", "sleep 37.25"))
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "parent"], cwd=project.root,
                            env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    # the lent call's child is running (not a fixed 1.5 s): the sleep itself, inside its sandbox, not
    # only a bwrap whose command line names it (a signal while bwrap is still setting up the sandbox
    # is a different case, a race in bwrap's own set-up, not covered here)
    wait_for(lambda: sleepers("^sleep 37.25") != "", what="the shell's 'sleep 37.25'")
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 130
    # killed, not killed in so many seconds: under CI's load the sandboxed (bwrap) shell took over 2 s
    # to go; a child left running would outlive any wait here (it sleeps 37.25 s)
    wait_for(lambda: sleepers() == "", timeout=15, what="the shell's 'sleep 37.25' to be killed")


def sleepers(pattern: str = "sleep 37.25") -> str:
    """The pids of processes whose command line matches `pattern` (by default any naming the sleep:
    bwrap, the shell, the sleep)."""
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False).stdout.strip()
