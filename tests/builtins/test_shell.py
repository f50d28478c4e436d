"""The shell skill: minimal environment, project root, timeouts that kill the whole group, caps."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from agentapps.errors import DeniedError, LimitError

CALLER = '''
frontmatter = {{"name": "runner", "allowed-tools": "shell", "metadata": {{"env": {env!r}, "params": {{"type": "object"}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke("shell", args)
'''


@pytest.fixture
def runner(project):
    project.write("runner.skill.py", CALLER.format(env=["DECLARED_TOKEN"]))
    return project


def test_runs_in_the_project_root_and_returns_output(runner):
    result = runner.invoke("runner", {"command": "pwd; echo err >&2; exit 3"})
    assert result["exitCode"] == 3
    assert result["stdout"].strip() == str(runner.root)
    assert result["stderr"] == "err\n"


def test_argv_form_does_not_use_a_shell(runner):
    result = runner.invoke("runner", {"argv": ["echo", "$HOME", "a b"]})
    assert result["stdout"] == "$HOME a b\n"


def test_environment_is_minimal_plus_declared_variables(runner, monkeypatch):
    monkeypatch.setenv("DECLARED_TOKEN", "declared-value")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "canary-secret-1234")
    result = runner.invoke("runner", {"command": "env"})
    names = {line.split("=", 1)[0] for line in result["stdout"].splitlines()}
    assert "DECLARED_TOKEN" in names
    assert "AWS_SECRET_ACCESS_KEY" not in names and "canary-secret-1234" not in result["stdout"]
    assert names <= {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TERM", "DECLARED_TOKEN", "PWD", "SHLVL", "_", "OLDPWD"}


def test_timeout_kills_the_process_group_and_is_a_limit_error(runner, tmp_path):
    _bare(runner)
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(LimitError, match="longer than 0.5 s"):
        runner.invoke("runner", {"command": f"sleep 30 & echo $! > {pidfile}; wait", "timeout": 0.5})
    assert time.monotonic() - started < 5
    time.sleep(0.2)
    child = int(pidfile.read_text())
    status = f"/proc/{child}/status"
    alive = os.path.exists(status) and "\nState:\tZ" not in Path(status).read_text()
    assert not alive  # killed (at most a zombie waiting for init to reap it)


def test_output_is_capped(runner):
    result = runner.invoke("runner", {"command": "head -c 3000000 /dev/zero | tr '\\\\0' x"})
    assert result["truncated"] is True and len(result["stdout"]) == 1024 * 1024


def test_shell_is_hidden_from_wildcards(project):
    project.write("star.skill.py", 'frontmatter = {"name": "star", "allowed-tools": "*", "metadata": {"params": {"type": "object"}}}\n\n'
                  'async def run(ctx, args):\n    return await ctx.manager.invoke("shell", {"command": "true"})\n')
    with pytest.raises(DeniedError, match="hidden"):
        project.invoke("star", {})


def test_stdin_input_and_cli_run(runner):
    result = runner.cli("run", "runner", "--arg-json", json.dumps({"argv": ["cat"], "input": "piped"}))
    assert json.loads(result.stdout)["stdout"] == "piped"


def _agent_skill(project, env, allowed="shell"):
    """A markdown skill played by agent-scripted whose code runs a command through `shell`."""
    code = ("const r = await ctx.manager.invoke('shell', {command: 'printf %s \"$MY_TOKEN\" | sha256sum'});"
            "return r.stdout.slice(0, 64)")
    project.write("hasher.turns.json", json.dumps({"turns": [{"code": code}, {"text": "done"}]}))
    model = {"agent": "agent-scripted", "script": "hasher.turns.json", "requests": "requests.jsonl"}
    meta = {"model": model, "env": env}
    project.write("hasher.skill.md", f"---\nname: hasher\ndescription: x\nallowed-tools: {allowed}\n"
                  f"metadata: {json.dumps(meta)}\n---\nHash the token.\n")


@pytest.mark.parametrize("declared", [["MY_TOKEN"], "MY_TOKEN"])
def test_agent_code_gets_the_served_skills_declared_env(project, declared):
    _agent_skill(project, declared)
    result = project.cli("run", "hasher", MY_TOKEN="tok-value-42")
    assert result.returncode == 0, result.stderr
    request = [json.loads(line) for line in (project.root / "requests.jsonl").read_text().splitlines()][-1]
    shown = json.loads(request["input"][0]["text"])
    assert shown == {"ok": True, "result": hashlib.sha256(b"tok-value-42").hexdigest()}
    assert "tok-value-42" not in result.stdout + result.stderr


def test_agent_code_gets_no_env_the_skill_does_not_declare(project):
    _agent_skill(project, ["OTHER"])
    result = project.cli("run", "hasher", MY_TOKEN="tok-value-42")
    request = [json.loads(line) for line in (project.root / "requests.jsonl").read_text().splitlines()][-1]
    assert json.loads(request["input"][0]["text"])["result"] == hashlib.sha256(b"").hexdigest()
    assert result.returncode == 0, result.stderr


def test_a_declared_env_string_is_one_variable(project, monkeypatch):
    project.write("runner.skill.py", CALLER.format(env="DECLARED_TOKEN"))
    monkeypatch.setenv("DECLARED_TOKEN", "declared-value")
    assert project.invoke("runner", {"command": "printf %s \"$DECLARED_TOKEN\""})["stdout"] == "declared-value"


def test_a_large_input_to_a_command_that_does_not_read_it_is_not_an_error(runner):
    result = runner.invoke("runner", {"command": "exit 3", "input": "x" * 60_000})
    assert result["exitCode"] == 3
    result = runner.invoke("shell", {"command": "exit 4", "input": "x" * 1_000_000})  # over a pipe's buffer
    assert result["exitCode"] == 4


def test_the_timeout_covers_writing_input(runner):
    started = time.monotonic()
    with pytest.raises(LimitError, match="longer than 0.5 s"):
        runner.invoke("shell", {"command": "sleep 30", "input": "x" * 1_000_000, "timeout": 0.5})
    assert time.monotonic() - started < 4


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


def _bare(project):
    """The subreaper alone: the pids a command writes are then ours (inside the OS sandbox they are
    its namespace's; tests/process/test_os_sandbox.py checks the sandboxed kill)."""
    project.write("main.skill.md", "---\nname: main\nmetadata: {role: main, sandbox: 'off'}\n---\n")


@pytest.mark.parametrize("timeout", [None, 0.5])
def test_descendants_that_leave_the_process_group_are_killed_too(runner, tmp_path, timeout):
    """`setsid` (a new session and group) and a double fork do not escape: on exit or on timeout."""
    _bare(runner)
    pids = tmp_path / "pids"
    command = (f"setsid sh -c 'echo $$ >> {pids}; exec sleep 60' < /dev/null > /dev/null 2>&1 & "
               f"(sh -c 'echo $$ >> {pids}; exec sleep 61' &) ; sleep 0.2")
    if timeout is None:
        assert runner.invoke("runner", {"command": command})["exitCode"] == 0
    else:
        with pytest.raises(LimitError):
            runner.invoke("runner", {"command": command + "; sleep 30", "timeout": timeout})
    escaped = [int(p) for p in pids.read_text().split()]
    assert len(escaped) == 2
    deadline = time.monotonic() + 3
    while any(_alive(p) for p in escaped) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in escaped)
