"""file-search (the `Grep` equivalent): RE2 over project text files, .gitignore respected, capped."""

from __future__ import annotations

import os
import time

import pytest

from agentapps.errors import ArgsError, DeniedError, UsageError

CALLER = '''
frontmatter = {{"name": "finder", "allowed-tools": {allowed!r}, "metadata": {{"params": {{"type": "object"}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke("file-search", args)
'''


@pytest.fixture
def tree(project):
    project.write(".gitignore", "build/\n*.log\n!keep.log\n/secret.txt\n")
    project.write("src/a.py", "import os\n# TODO: first\nx = 1\n")
    project.write("src/deep/b.py", "def f():\n    return 'todo: second'\n")
    project.write("src/.gitignore", "generated.py\n")
    project.write("src/generated.py", "# TODO: generated\n")
    project.write("build/out.txt", "TODO: built\n")
    project.write("run.log", "TODO: logged\n")
    project.write("keep.log", "TODO: kept\n")
    project.write("secret.txt", "TODO: secret\n")
    project.write("docs/secret.txt", "TODO: not the ignored one\n")
    (project.root / "blob.bin").write_bytes(b"TODO\0binary")
    project.write("finder.skill.py", CALLER.format(allowed="file-search"))
    return project


def _found(result):
    return sorted((m["path"], m["line"]) for m in result["matches"])


def test_matches_lines_and_respects_gitignore_files(tree):
    result = tree.invoke("file-search", {"pattern": "TODO"})
    assert _found(result) == [("docs/secret.txt", 1), ("keep.log", 1), ("src/a.py", 2)]
    assert result["truncated"] is False


def test_ignore_case_glob_and_path(tree):
    found = tree.invoke("file-search", {"pattern": "todo", "ignoreCase": True, "glob": "**/*.py"})
    assert _found(found) == [("src/a.py", 2), ("src/deep/b.py", 2)]
    found = tree.invoke("file-search", {"pattern": "todo", "ignoreCase": True, "path": "src/deep"})
    assert _found(found) == [("src/deep/b.py", 2)]
    assert found["matches"][0]["text"] == "    return 'todo: second'"


def test_output_is_capped(project):
    project.write("many.txt", "hit\n" * 500 + ("x" * 1000 + "hit\n"))
    result = project.invoke("file-search", {"pattern": "hit", "limit": 10})
    assert len(result["matches"]) == 10 and result["truncated"] is True
    last = project.invoke("file-search", {"pattern": "x{1000}hit"})["matches"][0]["text"]
    assert len(last) == 301 and last.endswith("…")


def test_a_pattern_that_would_backtrack_forever_is_linear(project):
    project.write("a.txt", "a" * 5000 + "!\n")
    started = time.monotonic()
    assert project.invoke("file-search", {"pattern": "^(a+)+$"})["matches"] == []
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(("pattern", "message"), [("(a", "cannot parse"), ("(?=a)", "lookahead"),
                                                  ("(a)\\1", "backreferences")])
def test_patterns_re2_refuses_are_bad_input(project, pattern, message):
    with pytest.raises(ArgsError, match=message):
        project.invoke("file-search", {"pattern": pattern})


def test_never_leaves_the_project(tree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("TODO: outside\n")
    os.symlink(outside, tree.root / "link")
    assert all(not m["path"].startswith("link") for m in tree.invoke("file-search", {"pattern": "TODO"})["matches"])
    with pytest.raises(DeniedError):
        tree.invoke("file-search", {"pattern": "TODO", "path": "../outside"})
    with pytest.raises(UsageError, match="not a folder"):
        tree.invoke("file-search", {"pattern": "TODO", "path": "src/a.py"})


def test_a_path_constraint_binds_the_folder_searched(tree):
    tree.write("finder.skill.py", CALLER.format(allowed="file-search(path=src*)"))
    assert _found(tree.invoke("finder", {"pattern": "TODO", "path": "./src/"})) == [("src/a.py", 2)]
    with pytest.raises(DeniedError):
        tree.invoke("finder", {"pattern": "TODO"})
    with pytest.raises(DeniedError):
        tree.invoke("finder", {"pattern": "TODO", "path": "src/../docs"})
