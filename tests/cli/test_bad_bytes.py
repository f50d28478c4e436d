"""Bytes that are not UTF-8, where a user meets them: environment values, folder and file names,
arguments. Each works through the real CLI (exit 0, the result printed), never an internal error.

POSIX hands them to Python as lone surrogates (`surrogateescape`): `$'\\xff'` arrives as `'\\udcff'`.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from typing import Any
from urllib.parse import quote

import pytest

SECRET = b"tok\xffen-0123456789"  # a declared secret whose value is not UTF-8
TEXT = os.fsdecode(SECRET)

LEAKY = '''
import base64, json, os, sys, urllib.parse

frontmatter = {"name": "leaky", "metadata": {"env": ["MY_TOKEN"]}}

def run(ctx, args):
    raw = os.environb[b"MY_TOKEN"]
    value = os.environ["MY_TOKEN"]
    sys.stdout.buffer.write(raw + b"\\n")  # the bytes themselves
    sys.stdout.flush()
    print(value, file=sys.stderr)
    return {"value": value, "url": urllib.parse.quote(raw), "b64": base64.b64encode(raw).decode(),
            "json": json.dumps(value)}
'''


def _cli(project: Any, *argv: str, cwd: Any = None, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "agentapps", *argv], cwd=cwd or project.root,
                          env=project.env(**env), capture_output=True, timeout=60, check=False)


def test_a_declared_secret_that_is_not_utf8_is_redacted_in_every_form(project):
    project.write("leaky.skill.py", LEAKY)
    project.write("other.skill.py", 'frontmatter = {"name": "other"}\n\ndef run(ctx, args):\n    return "fine"\n')
    other = _cli(project, "run", "other", MY_TOKEN=TEXT)  # every run of the project registers it
    assert other.returncode == 0, other.stderr
    assert other.stdout == b"fine\n"
    result = _cli(project, "run", "--json", "leaky", MY_TOKEN=TEXT)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    forms = [SECRET, TEXT.encode("utf-8", "surrogatepass"), "tok\ufffden".encode(), quote(SECRET).encode(),
             base64.b64encode(SECRET)[:16], b"tok\\udcffen"]
    assert [form for form in forms if form in out] == []
    answer = json.loads(result.stdout.splitlines()[-1])["result"]
    assert answer["value"] == answer["url"] == "[redacted:MY_TOKEN]"


@pytest.mark.parametrize("where", ["HOME", "AGENTAPPS_PATH", "project folder", "skill file name"])
def test_a_path_that_is_not_utf8_works(project, tmp_path, where):
    odd = os.fsdecode(b"odd\xff")
    folder = tmp_path / odd
    folder.mkdir()
    env: dict[str, str] = {"AGENTAPPS_CACHE_DIR": str(tmp_path / "cache")}  # the index cache is on
    cwd = project.root
    skill = 'frontmatter = {"name": "hello"}\n\ndef run(ctx, args):\n    return "hello"\n'
    if where == "HOME":
        env["HOME"] = str(folder)
        project.write("hello.skill.py", skill)
    elif where == "AGENTAPPS_PATH":
        env["AGENTAPPS_PATH"] = str(folder)
        (folder / "hello.skill.py").write_text(skill)
    elif where == "project folder":
        (folder / ".agent-apps").mkdir()
        (folder / "hello.skill.py").write_text(skill)
        cwd = folder
    else:
        (project.root / os.fsdecode(b"hel\xfflo.skill.py")).write_text(skill)
    for _ in range(2):  # the first run writes the index cache, the second reads it
        result = _cli(project, "run", "hello", cwd=cwd, **env)
        assert (result.returncode, result.stdout) == (0, b"hello\n"), result.stderr
        assert b"warning" not in result.stderr


def test_an_argument_that_is_not_utf8_on_a_file_session_is_run_printed_and_saved(project):
    project.write("chat.skill.py", '''
        frontmatter = {"name": "chat", "metadata": {"session": {"key": "args.sessionId", "store": "file"},
            "params": {"type": "object", "properties": {"sessionId": {"type": "string"},
                                                        "text": {"type": "string"}}}}}

        def run(ctx, args):
            return {"seen": len(ctx.locals.session), "length": len(args["text"])}
        ''')
    for seen in (0, 1):
        result = _cli(project, "run", "chat", "--session-id", "s1", "--text", os.fsdecode(b"caf\xe9!"))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"seen": seen, "length": 5}
    stored = json.loads((project.root / ".agent-apps" / "sessions" / "s1.json").read_text(encoding="utf-8"))
    assert [e["args"]["text"] for e in stored["entries"]] == ["caf\ufffd!", "caf\ufffd!"]
