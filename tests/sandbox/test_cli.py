"""The sandbox boundary through the real CLI, with the offline provider (agent-scripted).

A memory bomb or over-deep JSON from agent code becomes a tool error the model sees; the run goes
on with `memory` as it was and `--json` prints valid JSON. Signals and `--timeout` stop the run
and leave no sandbox process behind.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

NEST = "const nest = d => { let v = []; for (let i = 0; i < d; i++) v = [v]; return v; }; "


def agent_skill(project: Any, name: str, turns: list[dict[str, Any]], **model: Any) -> Path:
    """A markdown skill whose model is agent-scripted playing `turns`; returns the requests log."""
    log: Path = project.root / f"{name}.requests.jsonl"
    project.write(f"{name}.turns.json", json.dumps({"turns": turns}))
    config = {"agent": "agent-scripted", "script": f"{name}.turns.json", "requests": str(log),
              "snippetTimeout": 5, **model}
    project.write(f"{name}.skill.md", "\n".join([
        "---", f"name: {name}", "description: An agent skill under test.",
        f"metadata: {json.dumps({'model': config})}", "---", "Do the task.", ""]))
    return log


def tool_results(log: Path) -> list[dict[str, Any]]:
    """Every tool result the scripted model was shown, parsed."""
    out = []
    for line in log.read_text().splitlines():
        for item in json.loads(line)["input"]:
            if isinstance(item, dict):
                out.append(json.loads(item["text"]))
    return out


def test_a_memory_bomb_is_a_tool_error_and_the_run_goes_on(project: Any) -> None:
    log = agent_skill(project, "bomb", [
        {"code": "memory.n = 1; return 'set'"},
        {"code": "memory.n = 2; return 'x'.repeat(2 ** 28)"},  # ended the whole run (SIGTRAP)
        {"code": "memory.n += 10; return eval('x=1;'.repeat(2 ** 25))"},  # grew to GBs
        {"code": NEST + "ctx.manager.finish(nest(5000))"},  # RecursionError in the host
        {"code": NEST + "memory.deep = nest(5000); return 'deep'"},
        {"code": "return memory"},
        {"text": "survived"},
    ])
    result = project.cli("run", "--json", "bomb", timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    assert out["result"] == "survived" and out["stop_reason"] == "answered"
    set_, bomb, zone, finish, deep, memory = tool_results(log)
    assert set_ == {"ok": True, "result": "set"}
    assert bomb["ok"] is False and bomb["error"].startswith("memory: ")
    assert "restored" in bomb["error"]
    assert zone["ok"] is False and zone["error"].split(":")[0] in ("memory", "timeout")
    assert finish["ok"] is False and "nested deeper than 100" in finish["error"]
    assert deep["ok"] is False and "nested deeper than 100" in deep["error"]
    assert memory == {"ok": True, "result": {"args": {}, "n": 1}}  # the last good snapshot


def children(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines()
                          if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def spinning_run(project: Any, *argv: str) -> tuple[subprocess.Popen[str], int]:
    """Start a run whose agent code loops forever; return it and its sandbox process."""
    agent_skill(project, "spin", [{"code": "for (;;) {}"}, {"text": "never"}], snippetTimeout=60)
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", *argv, "spin"],
                            cwd=project.root, env=project.env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (kids := children(proc.pid)):
        assert time.monotonic() < deadline and proc.poll() is None, "no sandbox process started"
        time.sleep(0.05)
    time.sleep(0.5)  # let the snippet start spinning
    return proc, kids[0]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                           (signal.SIGKILL, -9)])
def test_a_signal_stops_the_run_and_its_sandbox_process(project: Any, sig: int, code: int) -> None:
    proc, sandbox = spinning_run(project)
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 2.0
    assert proc.returncode == code, err
    deadline = time.monotonic() + 2
    while alive(sandbox):
        assert time.monotonic() < deadline, f"sandbox process {sandbox} outlived the run"
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_run_timeout_stops_a_spinning_snippet_and_its_process(project: Any) -> None:
    proc, sandbox = spinning_run(project, "--timeout", "1.5")
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 4, err
    assert "--timeout 1.5 s" in err
    time.sleep(0.2)
    assert not alive(sandbox)


def test_lone_surrogates_from_agent_code_do_not_end_the_run(project: Any) -> None:
    log = agent_skill(project, "sur", [
        {"code": "console.log('\\ud800'); memory.s = '\\udfff'; return 'a\\ud800b'"},
        {"code": "ctx.manager.finish('x\\udfffy')"},
    ])
    result = project.cli("run", "--json", "sur")
    assert result.returncode == 0, result.stderr[-2000:]  # was exit 1: UnicodeEncodeError
    assert json.loads(result.stdout)["result"] == "x\ufffdy"
    assert tool_results(log)[0] == {"ok": True, "result": "a\ufffdb", "console": "\ufffd"}
