"""`agentapps ... | head`: when the reader of stdout goes away, the command ends quietly, as every
Unix tool does (exit 141 or 0, nothing on stderr), never with "internal error: BrokenPipeError"."""

from __future__ import annotations

import subprocess
import sys

import pytest

BIG = """
frontmatter = {"name": "big", "description": "Says a lot.", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    return "line\\n" * 400_000
"""


def _head(project, *argv: str) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", *argv], cwd=project.root, env=project.env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)  # the reader takes a little and goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(60), err


@pytest.mark.parametrize("argv", [("run", "big"), ("run", "--json", "big"), ("list",), ("list", "--json")])
def test_a_reader_that_goes_away_ends_the_command_quietly(project, argv):
    project.write("big.skill.py", BIG)
    for i in range(1500):  # enough skills that the listing outgrows the pipe
        project.write(f"many/s{i}.skill.md", f"---\nname: s{i}\ndescription: skill {i} of many\n---\nBody\n")
    code, err = _head(project, *argv)
    assert err == "" and code in (0, 141), (code, err)
