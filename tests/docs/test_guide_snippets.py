"""The guide's shell snippets marked `<!-- ci: run -->` run as written (no credentials needed)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- ci: run(?:, exit (\d+))? -->\n```sh\n(.*?)```", re.DOTALL)
BROKEN = ("Traceback", "internal error", "Unknown runner option", "command not found", "Unknown skill")


def snippets() -> list[tuple[str, str, int]]:
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for number, match in enumerate(MARKER.finditer(doc.read_text()), 1):
            found.append((f"{doc.relative_to(REPO)}#{number}", match.group(2), int(match.group(1) or 0)))
    return found


def test_the_guide_marks_snippets_to_run():
    assert len(snippets()) >= 4


@pytest.mark.parametrize(("where", "script", "code"), snippets(), ids=[s[0] for s in snippets()])
def test_guide_snippet_runs(tmp_path, where, script, code):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "agentapps"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m agentapps "$@"\n')
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(REPO / "README.md", work / "README.md")
    script = script.replace(".venv/bin/", "")  # the quick start's venv is this test's interpreter
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "NO_COLOR": "1",
           "AGENTAPPS_CACHE_DIR": "off"}
    result = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    output = result.stdout + result.stderr
    assert not [b for b in BROKEN if b in output], output
    assert result.returncode == code, output
