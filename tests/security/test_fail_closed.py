"""Fail closed: a project whose main skill does not load runs nothing (exit 2, its file and line),
because that skill's trust rules and settings would otherwise be dropped and what they guard would
run unasked."""

from __future__ import annotations

import pytest

RUNS_SHELL = '''
frontmatter = {"name": "deploy", "metadata": {"params": {"type": "object"}}}

async def run(ctx, args):
    return await ctx.manager.invoke("shell", {"command": "touch pwned"})
'''

BROKEN_MAINS = [
    # (what is wrong, main skill text, line the error names)
    ("a YAML error", "---\nname: proj\nmetadata:\n  role: main\n  trust: {rules: shell}\n  bad: [unclosed\n---\nMain.\n", 6),
    ("an invalid name", "---\nname: My_Project\nmetadata:\n  role: main\n  trust: {rules: shell}\n---\nMain.\n", 2),
    ("a quoted role and a comment", ("---\nname: Bad Name\nmetadata:\n  role: 'main'  # the project\n"
                                     "  trust: {rules: shell}\n---\nMain.\n"), 2),
]


@pytest.mark.parametrize(("what", "main", "line"), BROKEN_MAINS, ids=[b[0] for b in BROKEN_MAINS])
def test_a_main_skill_that_does_not_load_stops_every_run(project, what, main, line):
    project.write("main.skill.md", main)
    project.write("deploy.skill.py", RUNS_SHELL)
    result = project.cli("run", "deploy")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {project.root / 'main.skill.md'}:{line}: "), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (project.root / "pwned").exists()  # the call its trust rule guards never ran


def test_a_broken_skill_that_is_not_the_main_one_does_not_stop_the_project(project):
    project.write("main.skill.md", "---\nname: proj\nmetadata:\n  role: main\n---\nMain.\n")
    project.write("notes.skill.md", "---\nname: notes\nmetadata: [unclosed\n---\nrole: main is only in the body\n")
    result = project.cli("run", "hello", "--name", "Ada")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello, Ada!\n"
