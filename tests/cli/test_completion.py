"""Shell completion: `agentapps __complete` answers what is at the cursor (commands, options, skill
names, a skill's params and their values, files), and the bash, zsh and fish scripts that
`agentapps completion SHELL` prints hand those answers to the shell."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GREET = """---
name: greet
description: Greets.
metadata:
  params:
    type: object
    properties:
      name: {type: string}
      loudVoice: {type: boolean}
      mood: {enum: [happy, sad]}
---
Greet :arg[name].
"""
HIDDEN = "---\nname: plumbing\ndescription: Internal.\nmetadata:\n  visibility: hidden\n---\nx\n"


@pytest.fixture
def completing(project):
    project.write("greet.skill.md", GREET)
    project.write("plumbing.skill.md", HIDDEN)

    def complete(*words: str) -> list[str]:
        result = project.cli("__complete", *words)
        assert result.returncode == 0 and result.stderr == "", result.stderr
        return result.stdout.splitlines()

    return complete


@pytest.mark.parametrize(("words", "expected"), [
    (["r"], ["repl", "run", "runs"]),
    (["run", "gre"], ["greet"]),
    (["run", "--json", "gre"], ["greet"]),
    (["run", "greet", "--"], ["--arg", "--arg-json", "--help", "--loud-voice", "--mood", "--name", "--no-loud-voice"]),
    (["run", "greet", "--mood", ""], ["happy", "sad"]),
    (["run", "greet", "--mood", "h"], ["happy"]),
    (["run", "greet", "--name", ""], []),  # free text: nothing to offer
    (["run", "--replay", ""], ["__files__"]),
    (["run", "./"], ["__files__"]),
    (["run", "--dry"], ["--dry-run"]),
    (["runs", ""], ["list", "resume", "show", "stats"]),
    (["runs", "list", "--li"], ["--limit"]),
    (["describe", "gre"], ["greet"]),
    (["list", "--"], ["--all", "--help", "--json", "--query", "--tag"]),
    (["list", "--tag", ""], []),
    (["completion", ""], ["bash", "fish", "zsh"]),
])
def test_the_candidates_at_the_cursor(completing, words, expected):
    assert completing(*words) == expected


def test_skill_names_leave_out_hidden_skills_and_include_the_bundled_ones(completing):
    names = completing("run", "")
    assert "greet" in names and "hello" in names and "plumbing" not in names


def test_a_broken_project_completes_nothing_and_says_nothing(project):
    project.write("bad.skill.md", "---\nname: [oops\n---\n")
    project.write("bad2.skill.md", "---\nname: bad\n---\nx\n")
    project.write("bad3.skill.md", "---\nname: bad\n---\ny\n")  # the same name twice: every lookup of it fails
    result = project.cli("__complete", "run", "bad", "--")
    assert result.returncode == 0 and result.stderr == ""


def test_completion_prints_each_script_and_refuses_another_shell(project):
    for shell in ("bash", "zsh", "fish"):
        printed = project.cli("completion", shell)
        assert printed.returncode == 0 and "agentapps __complete" in printed.stdout
    refused = project.cli("completion", "tcsh")
    assert refused.returncode == 2 and refused.stderr == \
        "error: agentapps completion takes one of bash, zsh, fish, got 'tcsh'.\n"
    assert "eval \"$(agentapps completion bash)\"" in project.cli("completion", "--help").stdout


def _shell(project, name: str, code: str) -> list[str]:
    """Run `code` in a real `name` shell whose `agentapps` is this checkout."""
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    bin_dir = project.root.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "agentapps"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agentapps "$@"\n')
    shim.chmod(0o755)
    env = {**project.env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([name, "-c", code], cwd=project.root, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_bash_completes_through_the_script(completing, project):
    got = _shell(project, "bash", 'eval "$(agentapps completion bash)"; '
                 'COMP_WORDS=(agentapps run greet --mo); COMP_CWORD=3; _agentapps_complete; '
                 'printf "%s\\n" "${COMPREPLY[@]}"; '
                 'COMP_WORDS=(agentapps run --replay gre); COMP_CWORD=3; _agentapps_complete; '
                 'printf "%s\\n" "${COMPREPLY[@]}"')
    assert got == ["--mood", "greet.skill.md"]


def test_zsh_completes_through_the_script(completing, project):
    got = _shell(project, "zsh", 'eval "$(agentapps completion zsh | grep -v "^compdef")"; '
                 'compadd() { shift; print -l -- "$@"; }; _files() { print FILES; }; '
                 'words=(agentapps run greet --mo); CURRENT=4; _agentapps; '
                 'words=(agentapps run --replay x); CURRENT=4; _agentapps')
    assert got == ["--mood", "FILES"]


def test_fish_completes_through_the_script(completing, project):
    got = _shell(project, "fish", 'source (agentapps completion fish | psub); '
                 'complete -C "agentapps run greet --mo"; complete -C "agentapps run gre"')
    assert got == ["--mood", "greet"]


def test_the_scripts_are_valid_for_their_shells(project):
    for name, check in (("bash", ["bash", "-n"]), ("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])):
        if shutil.which(name) is None:
            continue
        path = Path(project.root) / f"completion.{name}"
        path.write_text(project.cli("completion", name).stdout)
        assert subprocess.run([*check, str(path)], check=False, capture_output=True, timeout=30).returncode == 0, name
