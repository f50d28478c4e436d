"""A full disk while saving a session or state: one clear error naming what was not saved.

Real failing file systems, no mocks: a 64 KiB tmpfs filled to the brim over `.agent-apps/` (needs
root; skipped otherwise), and RLIMIT_FSIZE, which makes any write past a few bytes fail with EFBIG
for an unprivileged process. The session case still prints the skill's result (exit 1); the old
files are left exactly as they were.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

BIG = "x" * 4000  # larger than what RLIMIT_FSIZE lets a process write

SKILLS = {
    "chat.skill.py": f'''
        frontmatter = {{"name": "chat", "metadata": {{"session": {{"key": "args.sessionId", "store": "file"}},
            "params": {{"type": "object", "properties": {{"sessionId": {{"type": "string"}}}}}}}}}}

        def run(ctx, args):
            return {{"answer": 42, "padding": "{BIG}"}}
        ''',
    "keep.skill.py": f'''
        frontmatter = {{"name": "keep", "allowed-tools": "state-set"}}

        async def run(ctx, args):
            await ctx.manager.invoke("state-set", {{"key": "k", "value": "{BIG}"}})
            return "saved"
        ''',
    "fresh.skill.py": f'''
        frontmatter = {{"name": "fresh", "allowed-tools": "state-set"}}

        async def run(ctx, args):
            await ctx.manager.invoke("state-set", {{"key": "new", "value": "{BIG}"}})
            return "saved"
        ''',
}


def _cli(project: Any, how: str, *argv: str) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if how == "rlimit":
            resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    return subprocess.run([sys.executable, "-m", "agentapps", "run", *argv], cwd=project.root,
                          env=project.env(AGENTAPPS_CACHE_DIR="off", AGENTAPPS_RUN_LOG="off"), capture_output=True, text=True,
                          timeout=60, preexec_fn=limit, check=False)


@pytest.fixture(params=["tmpfs", "rlimit"])
def full(request: pytest.FixtureRequest, project: Any) -> Iterator[tuple[Any, str]]:
    for name, text in SKILLS.items():
        project.write(name, text)
    data = project.root / ".agent-apps"
    # earlier, good data that must survive the failed writes
    (data / "sessions").mkdir()
    (data / "sessions" / "s1.json").write_text(json.dumps({"key": "s1", "entries": [{"skill": "chat"}]}))
    (data / "state").mkdir()
    (data / "state" / "k.json").write_text(json.dumps({"key": "k", "value": "old"}))
    if request.param == "rlimit":
        yield project, "rlimit"
        return
    saved = {p.relative_to(data): p.read_bytes() for p in data.rglob("*.json")}
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(data)],
                                           capture_output=True, check=False).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        for relative, content in saved.items():
            (data / relative).parent.mkdir(exist_ok=True)
            (data / relative).write_bytes(content)
        with open(data / "filler", "wb", buffering=0) as filler:  # fill the file system to the last byte
            for size in (4096, 1):
                try:
                    while True:
                        filler.write(b"\0" * size)
                except OSError:
                    pass
        yield project, "tmpfs"
    finally:
        subprocess.run(["umount", "-l", str(data)], check=False)


def test_a_session_that_cannot_be_saved_still_prints_the_result(full):
    project, how = full
    result = _cli(project, how, "chat", "--session-id", "s1")
    assert result.returncode == 1
    assert json.loads(result.stdout)["answer"] == 42  # the skill's result is still printed
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: Session 's1' was not saved: ") and "earlier entries are kept" in line
    stored = json.loads((project.root / ".agent-apps" / "sessions" / "s1.json").read_text())
    assert stored["entries"] == [{"skill": "chat"}]


def test_with_json_the_result_and_the_error_are_one_valid_object(full):
    project, how = full
    result = _cli(project, how, "--json", "chat", "--session-id", "s1")
    out = json.loads(result.stdout)
    assert result.returncode == 1 and out["ok"] is False
    assert out["result"]["answer"] == 42 and "was not saved" in out["error"]["message"]


def test_state_that_cannot_be_saved_names_the_key_and_keeps_the_old_value(full):
    project, how = full
    result = _cli(project, how, "keep")
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "State key 'k' was not saved: " in line and "previous value is kept" in line
    assert json.loads((project.root / ".agent-apps" / "state" / "k.json").read_text())["value"] == "old"
    leftovers = [p.name for p in (project.root / ".agent-apps" / "state").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_new_state_key_that_cannot_be_saved_is_said_to_stay_unset(full):
    project, how = full
    result = _cli(project, how, "fresh")
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "State key 'new' was not saved: " in line and "it stays unset" in line
    assert "previous value" not in line  # it had none
    assert not (project.root / ".agent-apps" / "state" / "new.json").exists()
