"""The shell skill: minimal environment, project root, timeouts that kill the whole group, caps."""

from __future__ import annotations

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
