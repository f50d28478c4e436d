"""trust: approval on a terminal (pseudo-terminal), denial without one, --approve, remembered 'always'."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

CALLER = '''
frontmatter = {"name": "writer", "allowed-tools": "file-write", "metadata": {
    "trust": {"rules": "file-write shell"}, "params": {"type": "object"}}}

async def run(ctx, args):
    return await ctx.manager.invoke("file-write", {"path": "out.txt", "content": "written"})
'''


def test_without_a_terminal_a_trusted_call_is_denied_with_exit_3(project):
    project.write("writer.skill.py", CALLER)
    result = project.cli("run", "writer")
    assert result.returncode == 3
    assert "needs approval (trust rule 'file-write')" in result.stderr and "--approve" in result.stderr
    assert not (project.root / "out.txt").exists()
    log = (project.root / ".agent-apps" / "trust.log").read_text()
    assert '"decision": "denied (no terminal)"' in log


def test_approve_pattern_allows_the_call(project):
    project.write("writer.skill.py", CALLER)
    result = project.cli("run", "writer", AGENTAPPS_APPROVE="file-*")
    assert result.returncode == 0, result.stderr
    assert (project.root / "out.txt").read_text() == "written"


def test_calls_not_matching_rules_need_no_approval(project):
    project.write("reader.skill.py", CALLER.replace('"name": "writer"', '"name": "reader"')
                  .replace('"rules": "file-write shell"', '"rules": "shell"'))
    assert project.cli("run", "reader").returncode == 0


def _run_in_pty(project, answer: str | None, timeout_env: str = "10"):
    pid, fd = pty.fork()
    if pid == 0:  # child: become the CLI on the pseudo-terminal
        os.chdir(project.root)
        env = project.env(AGENTAPPS_TRUST_TIMEOUT=timeout_env)
        env.pop("CI", None)
        os.execve(sys.executable, [sys.executable, "-m", "agentapps", "run", "writer"], env)
    output = b""
    deadline = time.monotonic() + 30
    sent = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        if answer is not None and not sent and b"Allow?" in output:
            os.write(fd, answer.encode() + b"\n")
            sent = True
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


def test_terminal_user_allows_once(project):
    project.write("writer.skill.py", CALLER)
    code, out = _run_in_pty(project, "y")
    assert code == 0, out
    assert "wants to call 'file-write'" in out
    assert (project.root / "out.txt").read_text() == "written"
    assert not (project.root / ".agent-apps" / "trust.json").exists()


def test_terminal_user_allows_always_and_it_is_remembered(project):
    project.write("writer.skill.py", CALLER)
    code, out = _run_in_pty(project, "a")
    assert code == 0, out
    assert json.loads((project.root / ".agent-apps" / "trust.json").read_text()) == {"always": ["writer -> file-write"]}
    (project.root / "out.txt").unlink()
    code, out = _run_in_pty(project, None, timeout_env="5")  # a later terminal run: not asked again
    assert code == 0 and "Allow?" not in out and (project.root / "out.txt").exists()
    assert project.cli("run", "writer").returncode == 3  # without a terminal only --approve counts


def test_terminal_user_denies_and_timeout_denies(project):
    project.write("writer.skill.py", CALLER)
    code, out = _run_in_pty(project, "n")
    assert code == 3 and "was not approved" in out
    code, out = _run_in_pty(project, None, timeout_env="0.5")
    assert code == 3 and "no answer: denied" in out
    assert not (project.root / "out.txt").exists()


def test_trust_cannot_be_switched_off_by_the_callee(project):
    project.write("writer.skill.py", CALLER.replace("file-write", "sneaky").replace('"path": "out.txt", "content": "written"', ""))
    project.write("sneaky.skill.py", 'frontmatter = {"name": "sneaky", "metadata": {"trust": False, "$inherit": False}}\n\n'
                  'def run(ctx, args):\n    return "ran"\n')
    assert subprocess.run([sys.executable, "-m", "agentapps", "run", "writer"], cwd=project.root,
                          env=project.env(), capture_output=True, stdin=subprocess.DEVNULL).returncode == 3


def test_locked_middleware_run_statically(project):
    for name in ("trust", "validate-allowed-tools", "validate-args", "execute"):
        described = json.loads(project.cli("describe", name, "--json").stdout)
        assert described["static"] is True, name
