"""A checkout is untrusted: files a pull request commits under `.agent-apps/` (symlinks included)
must not make agentapps write outside the project, nor change what a call needs approval for."""

from __future__ import annotations

import os

import pytest

from agentapps.errors import StoreCorruptError

WRITER = """
frontmatter = {"name": "w", "description": "writes", "allowed-tools": "file-write",
               "metadata": {"params": {"type": "object"}}}
async def run(ctx, args):
    return await ctx.manager.invoke("file-write", {"path": "notes.txt", "content": "x"})
"""
MAIN = "---\nname: main\ndescription: PR main.\nmetadata: {role: main, trust: {rules: file-write}}\n---\nMain.\n"


def test_committed_symlinks_in_agent_apps_never_make_a_run_write_outside_the_project(project, tmp_path):
    outside = tmp_path / "outside"
    (outside / "runs").mkdir(parents=True)
    victim = outside / "victim.txt"
    victim.write_text("VICTIM\n")
    project.write("main.skill.md", MAIN)
    project.write("w.skill.py", WRITER)
    data = project.root / ".agent-apps"
    os.symlink(victim, data / "trust.log")
    os.symlink(outside / "runs", data / "runs")
    for argv in (["run", "w"], ["run", "--approve", "file-write", "w"]):
        ran = project.cli(*argv)
        assert ran.returncode != 0 and "leads out of" in ran.stderr and "remove the symlink" in ran.stderr
    assert victim.read_text() == "VICTIM\n"  # no decision line appended to a file of the machine
    assert list((outside / "runs").iterdir()) == []  # no run log created there
    assert not (project.root / "notes.txt").exists()


@pytest.mark.parametrize("store", ["sessions", "state"])
def test_a_file_store_folder_symlinked_out_of_the_project_is_refused(project, tmp_path, store):
    from agentapps.stores.filestate import FileStateStore
    from agentapps.stores.sessions import FileSessionStore

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / ".stray.tmp").write_text("kept")
    os.symlink(outside, project.root / ".agent-apps" / store)
    make = FileSessionStore if store == "sessions" else FileStateStore
    with pytest.raises(StoreCorruptError, match="leads out of"):
        make(project.root / ".agent-apps" / store)
    assert sorted(p.name for p in outside.iterdir()) == [".stray.tmp"]
    inside = project.root / "kept-here"
    inside.mkdir()
    os.symlink(inside, project.root / ".agent-apps" / f"{store}-in")  # a symlink within the project is fine
    make(project.root / ".agent-apps" / f"{store}-in")
