"""A canary secret in the environment never shows up in output, sessions, state, logs or tracebacks."""

from __future__ import annotations

import json
import os

import pytest

CANARY = "canary-7f3a1c9e-secret"

SKILLS = {
    "leak-result.skill.py": '''
        import os
        frontmatter = {"name": "leak-result", "metadata": {"env": ["CANARY_TOKEN"]}}

        def run(ctx, args):
            return {"token": os.environ["CANARY_TOKEN"]}
        ''',
    "leak-error.skill.py": '''
        import os
        frontmatter = {"name": "leak-error", "metadata": {"env": ["CANARY_TOKEN"]}}

        def run(ctx, args):
            raise ValueError("bad token " + os.environ["CANARY_TOKEN"])
        ''',
    "leak-shell.skill.py": '''
        frontmatter = {"name": "leak-shell", "allowed-tools": "shell", "metadata": {"env": ["CANARY_TOKEN"]}}

        async def run(ctx, args):
            return await ctx.manager.invoke("shell", {"command": "env"})
        ''',
    "prompt.skill.md": '''
        ---
        name: prompt
        metadata:
          env: [CANARY_TOKEN]
        ---
        Use the token :env[CANARY_TOKEN] carefully.
        ''',
    "undeclared.skill.md": '''
        ---
        name: undeclared
        ---
        Token: :env[CANARY_TOKEN]
        ''',
    "chat.skill.py": '''
        import os
        frontmatter = {"name": "chat", "metadata": {
            "env": ["CANARY_TOKEN"], "session": {"key": "args.sessionId", "store": "file"},
            "params": {"type": "object", "properties": {"sessionId": {"type": "string"}}}}}

        async def run(ctx, args):
            await ctx.manager.invoke("state-set", {"key": "last", "value": {"seen": True}})
            return "echo " + os.environ["CANARY_TOKEN"]
        ''',
}

RUNS = [
    (["leak-result"], 0),
    (["--json", "leak-result"], 0),
    (["leak-error"], 1),
    (["-v", "leak-error"], 1),
    (["--json", "leak-error"], 1),
    (["leak-shell"], 0),
    (["--dry-run", "prompt"], 0),
    (["--dry-run", "undeclared"], 3),
    (["chat", "--session-id", "s1"], 0),
    (["--json", "chat", "--session-id", "s1"], 0),
]


@pytest.fixture
def leaky(project):
    for name, text in SKILLS.items():
        project.write(name, text)
    return project


@pytest.mark.parametrize(("argv", "code"), RUNS, ids=[" ".join(a) for a, _ in RUNS])
def test_canary_never_reaches_stdout_or_stderr(leaky, argv, code):
    result = leaky.cli("run", *argv, CANARY_TOKEN=CANARY)
    assert result.returncode == code, result.stderr
    assert CANARY not in result.stdout and CANARY not in result.stderr
    if code == 0 and argv[-1] != "prompt":
        assert "[redacted]" in result.stdout


def test_canary_never_reaches_files_on_disk(leaky):
    for argv, _ in RUNS:
        leaky.cli("run", *argv, CANARY_TOKEN=CANARY)
    written = []
    for base in (leaky.root, leaky.home):
        for folder, _, files in os.walk(base):
            for name in files:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    if CANARY.encode() in handle.read():
                        written.append(path)
    assert written == []
    sessions = list((leaky.root / ".agent-apps" / "sessions").glob("*.json"))
    assert sessions, "the chat skill should have saved a session"
    assert "[redacted:CANARY_TOKEN]" in sessions[0].read_text()
    assert json.loads((leaky.root / ".agent-apps" / "state" / "last.json").read_text())
