"""The in-process CLI runner (tests/support/cli.py) prints what the real CLI prints: the same
invocations run both ways, in twin projects, give the same stdout, stderr and exit code; and a run in
process leaves the test's process as it found it."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Project
from tests.support import cli

SKILLS = {
    "echo.skill.py": '''
        frontmatter = {"name": "echo", "description": "Echo args.", "metadata": {"params": {
            "type": "object", "properties": {"name": {"type": "string"}, "times": {"type": "integer"},
            "input": {"type": "string"}}}}}

        def run(ctx, args):
            return args
        ''',
    "fail.skill.py": '''
        frontmatter = {"name": "fail", "description": "Fails."}

        def helper():
            raise ValueError("nope")

        def run(ctx, args):
            helper()
        ''',
    "noisy.skill.py": '''
        import sys

        frontmatter = {"name": "noisy", "description": "Prints, writes bytes, warns.",
                       "metadata": {"env": ["NOISY_TOKEN"]}}

        def run(ctx, args):
            import os
            print("printed by the skill", os.environ.get("NOISY_TOKEN"))
            sys.stdout.buffer.write(b"bytes \\xc3\\xa9\\n")
            sys.stderr.write("half an emoji: \\ud83d\\n")
            return f"token {os.environ.get('NOISY_TOKEN')}\\r\\ncaf\\u00e9, a line a pipe reads as its own"
        ''',
    "leaver.skill.py": '''
        import sys

        frontmatter = {"name": "leaver", "description": "Exits from inside."}

        def run(ctx, args):
            sys.exit(3)
        ''',
    "ask.skill.md": '''
        ---
        name: ask
        description: An agent skill played by agent-scripted.
        metadata:
          params: {type: object, properties: {topic: {type: string}}}
          model: {agent: agent-scripted, script: ask.turns.json, snippetTimeout: 5}
        ---
        Tell me about :arg[topic].
        ''',
    "ask.turns.json": json.dumps({"turns": [
        {"text": "Looking.", "code": "return await ctx.manager.invoke('echo', {name: 'from agent code'})"},
        {"text": "Done: from agent code."},
    ]}),
    "bad.skill.md": "---\nname: bad\ndescription: x: y\n---\nHi.\n",
}

# (argv, stdin, extra environment): each a kind of thing a test asks of the CLI
TABLE: list[tuple[list[str], str | None, dict[str, str]]] = [
    (["--version"], None, {}),
    (["--help"], None, {}),
    (["run", "--help"], None, {}),
    (["run", "echo", "--name", "Ada", "--times", "2"], None, {}),
    (["run", "--json", "echo", "--name", "Ada"], None, {}),
    (["run", "echo"], "piped text\n", {}),
    (["run", "--args-file", "-", "echo"], '{"name": "from stdin"}', {}),
    (["run", "echo", "--times", "many"], None, {}),
    (["run", "echo", "--nmae", "Ada"], None, {}),
    (["run", "ehco"], None, {}),
    (["run", "--bogus", "echo"], None, {}),
    (["run", "fail"], None, {}),
    (["run", "-v", "fail"], None, {}),
    (["run", "--json", "fail"], None, {}),
    (["run", "noisy"], None, {"NOISY_TOKEN": "tok-5e1f-secret-value"}),
    (["run", "leaver"], None, {}),
    (["run", "bad"], None, {}),
    (["run", "ask", "--topic", "owls"], None, {}),
    (["run", "--json", "-q", "ask", "--topic", "owls"], None, {}),
    (["run", "--dry-run", "ask", "--topic", "owls"], None, {}),
    (["run", "file-read", "--path", "../outside.txt"], None, {}),
    (["list"], None, {}),
    (["list", "--json", "--query", "echo"], None, {}),
    (["describe", "echo", "--json"], None, {}),
    (["which", "echo"], None, {}),
    (["check"], None, {}),
    (["sessions", "list"], None, {}),
    (["no-such-command"], None, {}),
    (["runs"], None, {}),
]


def _twin(tmp_path: Path, name: str) -> Project:
    project = Project(tmp_path / name / "proj", tmp_path / name / "home")
    (project.root / ".agent-apps").mkdir(parents=True)
    project.home.mkdir()
    for path, text in SKILLS.items():
        project.write(path, text)
    return project


def _normal(text: str, project: Project) -> str:
    """What may differ between two runs: their folders, times, and where agentapps and its bundled
    skills are installed (a real process imports the installed copy, pytest may have the checkout's)."""
    text = text.replace(str(project.root), "<ROOT>").replace(str(project.home), "<HOME>")
    text = re.sub(r'File "[^"]*/(agentapps|skills)/', r'File "<INSTALLED>/\1/', text)
    text = re.sub(r'("duration_ms": |"durationMs": )[0-9.]+', r"\1<N>", text)
    return re.sub(r"\b[0-9.]+ ms\b", "<N> ms", text)


def _run(project: Project, argv: list[str], stdin: str | None, env: dict[str, str], *, real: bool) -> Any:
    return project.cli(*argv, input=stdin, real_process=real, **env)


@pytest.mark.parametrize(("argv", "stdin", "env"), TABLE, ids=[" ".join(argv) for argv, _, _ in TABLE])
def test_in_process_prints_what_the_real_cli_prints(tmp_path, monkeypatch, argv, stdin, env):
    outcomes = []
    for name, real in (("real", True), ("here", False)):
        project = _twin(tmp_path, name)
        monkeypatch.chdir(project.root)
        done = _run(project, argv, stdin, env, real=real)
        outcomes.append((done.returncode, _normal(done.stdout, project), _normal(done.stderr, project)))
    assert outcomes[1] == outcomes[0]


def test_a_run_in_process_leaves_the_process_as_it_found_it(project, monkeypatch):
    monkeypatch.setenv("KEPT_BY_THE_TEST", "1")
    project.write("meddler.skill.py", '''
        import os, signal, sys

        frontmatter = {"name": "meddler", "description": "Changes what it can."}

        def run(ctx, args):
            os.environ["LEFT_BY_THE_RUN"] = "1"
            os.chdir("/")
            os.umask(0o077)
            sys.argv.append("--left")
            sys.path.insert(0, "/left/by/the/run")
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
            return "meddled"
        ''')
    before = (dict(os.environ), os.getcwd(), sys.argv[:], sys.path[:], sys.stdout, sys.stderr, sys.stdin,
              signal.getsignal(signal.SIGUSR1), signal.getsignal(signal.SIGTERM), os.umask(0o022))
    os.umask(before[-1])
    done = project.cli("run", "meddler", EXTRA_FOR_THE_RUN="1")
    assert (done.returncode, done.stdout) == (0, "meddled\n"), done.stderr
    after = (dict(os.environ), os.getcwd(), sys.argv[:], sys.path[:], sys.stdout, sys.stderr, sys.stdin,
             signal.getsignal(signal.SIGUSR1), signal.getsignal(signal.SIGTERM), os.umask(0o022))
    os.umask(after[-1])
    assert after == before


def test_a_run_that_leaves_a_process_behind_fails_the_test(project):
    project.write("spawner.skill.py", '''
        import subprocess

        frontmatter = {"name": "spawner", "description": "Starts a process and leaves it."}

        def run(ctx, args):
            return subprocess.Popen(["sleep", "30"]).pid
        ''')
    with pytest.raises(AssertionError, match=r"the run left processes \[\d+\] running"):
        project.cli("run", "spawner")


@pytest.mark.parametrize("argv", [
    ["serve", "--port", "0"], ["-v", "mcp-server"], ["worker", "jobs", "--group", "g", "--handler", "h"],
    ["run", "--timeout", "5", "echo"], ["run", "--json", "--timeout=5", "echo"], ["-v", "run", "--timeout", "1", "x"],
])
def test_what_only_a_real_process_can_do_is_refused_in_process(project, argv):
    with pytest.raises(cli.NeedsRealProcess, match="pass real_process=True"):
        project.cli(*argv)


@pytest.mark.parametrize("argv", [
    ["worker", "jobs", "--group", "g", "--handler", "h", "--max-events", "1"],
    ["run", "echo", "--timeout", "5"],  # after the skill's name: the skill's own param
    ["run", "--timeout", "soon", "echo"],  # refused by the parser: nothing runs
])
def test_what_ends_by_itself_runs_in_process(argv):
    assert cli.needs_real_process(argv) is None


def test_the_signal_handlers_a_run_installs_are_the_tests_again_afterwards(project):
    mine = signal.getsignal(signal.SIGINT)
    project.cli("run", "hello", "--name", "Ada")
    assert signal.getsignal(signal.SIGINT) is mine
