"""`agentapps run --resume RUN_ID`: an agent run checkpoints after each completed turn and continues
from there after a failure, a kill or a timeout, its usage counted once (docs/runs.md, "Resume")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.waiting import wait_for

TURNS = 20
HOLD_AT = 12  # the turn whose code waits while the file `hold` exists
USAGE = {"inputTokens": 100, "outputTokens": 10}
PRICING = {"scripted-model": {"input": 3, "output": 15}}  # USD per million tokens
WAIT_SECONDS = float(os.environ.get("AGENTAPPS_TEST_RESUME_WAIT", "20"))


def _turns(count: int = TURNS) -> list[dict[str, Any]]:
    """`count` model turns: each adds its number to `memory.seen`; turn HOLD_AT first calls `hold`
    (which waits while the file `hold` exists); the last finishes with what memory saw."""
    turns = []
    for n in range(1, count + 1):
        code = f"memory.seen = [...(memory.seen || []), {n}];"
        if n == HOLD_AT:
            code = f"await ctx.manager.invoke('hold', {{}}); {code}"
        if n == count:
            code += " ctx.manager.finish({seen: memory.seen, topic: memory.args.topic});"
        turns.append({"text": f"turn {n}", "code": code, "usage": USAGE})
    return turns


HOLD = """import asyncio, pathlib
if pathlib.Path('hold').exists():
    pathlib.Path('at-hold').touch()
    while pathlib.Path('hold').exists():
        await asyncio.sleep(0.05)
return 'held'"""


@pytest.fixture
def long_run(agentic: Any) -> Any:
    agentic.code("hold", HOLD)
    agentic.skill("long", _turns(), params={"type": "object", "properties": {"topic": {"type": "string"}}},
                  model={"id": "scripted-model", "pricing": PRICING, "snippetTimeout": WAIT_SECONDS + 10,
                         "maxTurns": 30})
    return agentic


def _cli(agentic: Any, *argv: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentapps", *argv], cwd=agentic.project.root,
                            env=agentic.project.env(**env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _kill_at_hold(agentic: Any, *argv: str, **env: str) -> None:
    """Start `agentapps run ARGV` as a real process, SIGKILL it while turn HOLD_AT's code waits."""
    root = agentic.project.root
    (root / "hold").touch()
    proc = _cli(agentic, "run", *argv, **env)
    try:
        wait_for(lambda: (root / "at-hold").exists() or proc.poll() is not None, timeout=WAIT_SECONDS,
                 what=f"turn {HOLD_AT}")
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    (root / "hold").unlink()


def _runs(agentic: Any) -> list[dict[str, Any]]:
    listed = agentic.project.cli("runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)["runs"]  # type: ignore[no-any-return]


def _show(agentic: Any, run_id: int) -> dict[str, Any]:
    shown = agentic.project.cli("runs", "show", str(run_id), "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)  # type: ignore[no-any-return]


def test_a_run_killed_at_turn_12_resumes_and_ends_as_an_uninterrupted_run(long_run):
    whole = long_run.run("--json", "long", "--topic", "tides", real_process=True)
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout)

    _kill_at_hold(long_run, "long", "--topic", "tides")
    killed = _runs(long_run)[0]
    assert killed["id"] == 2 and killed["exit_code"] == -1 and killed["stop_reason"] == "unfinished"
    assert killed["turns"] == HOLD_AT - 1  # its record holds what it spent up to the last checkpoint

    resumed = long_run.run("--json", "--resume", "2", real_process=True)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["result"] == expected["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}
    assert (out["turns"], out["usage"], out["cost"]) == (expected["turns"], expected["usage"], expected["cost"])

    # one record for the run, with every turn counted once, as the uninterrupted run's
    runs = _runs(long_run)
    assert [r["id"] for r in runs] == [2, 1]
    first, again = _show(long_run, 1), _show(long_run, 2)
    for key in ("turns", "steps", "input_tokens", "output_tokens", "cost", "models"):
        assert again[key] == first[key], key
    assert (again["turns"], again["input_tokens"], again["exit_code"], again["stop_reason"]) == (
        TURNS, TURNS * USAGE["inputTokens"], 0, "finished")
    # the resumed run played the script from turn 12, not from the top
    turns = [r["turn"] for r in long_run.requests()]
    assert turns == [*range(1, TURNS + 1), *range(1, HOLD_AT + 1), *range(HOLD_AT, TURNS + 1)]

    again_resumed = long_run.run("--resume", "2")
    assert again_resumed.returncode == 7 and "ended well" in again_resumed.stderr
