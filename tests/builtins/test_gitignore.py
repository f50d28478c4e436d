""".gitignore matching (agentapps/files/gitignore.py) agrees with git itself: the same tree of
files and `.gitignore` files is asked of `git check-ignore` and of `Ignored`, as file-search's
walk asks it (a folder first, then what is inside a folder that is not ignored)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from agentapps.files.gitignore import Ignored, parse

ROOT_RULES = r"""# a comment, then a blank line

*.log
!keep.log
/root-only.txt
build/
docs/**/*.md
**/cache
a/**/z.txt
\#hash.txt
\!bang.txt
space\ 
lit[ab].txt
neg[!c].txt
q?.txt
sub/anchored.txt
vendor/**
!vendor/kept/
*.tmp
"""
NESTED_RULES = """!important.tmp
/local-only.txt
*.gen
deep/
"""
FILES = [
    "app.log", "keep.log", "src/app.log", "src/keep.log", "root-only.txt", "src/root-only.txt",
    "build/x.txt", "src/build/y.txt", "build.txt", "docs/a.md", "docs/x/y/b.md", "docs/c.txt",
    "other/docs/d.md", "cache/1.txt", "src/cache/2.txt", "src/cache.txt", "a/z.txt", "a/b/c/z.txt",
    "b/a/z.txt", "#hash.txt", "!bang.txt", "space ", "space", "lita.txt", "litc.txt", "nega.txt",
    "negc.txt", "q1.txt", "q12.txt", "sub/anchored.txt", "x/sub/anchored.txt", "vendor/v.txt",
    "vendor/kept/k.txt", "pkg/important.tmp", "pkg/other.tmp", "pkg/local-only.txt",
    "pkg/in/local-only.txt", "pkg/code.gen", "code.gen", "pkg/deep/d.txt", "deep/d.txt", "plain.txt",
]


def _git_ignored(root: Path) -> set[str]:
    listed = "\n".join(FILES) + "\n"
    done = subprocess.run(["git", "check-ignore", "--stdin"], cwd=root, input=listed, capture_output=True,
                          text=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    return set(done.stdout.splitlines())


def _ours(root: Path) -> set[str]:
    """What a walk like file-search's leaves out: a path whose folder, or itself, is ignored."""
    ignored = Ignored()
    ignored.add("", (root / ".gitignore").read_text())
    ignored.add("pkg", (root / "pkg/.gitignore").read_text())
    out = set()
    for rel in FILES:
        parts = rel.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
        if any(ignored(folder, True) for folder in folders) or ignored(rel, False):
            out.add(rel)
    return out


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_agrees_with_git_check_ignore(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(ROOT_RULES)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/.gitignore").write_text(NESTED_RULES)
    for rel in FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    expected = _git_ignored(tmp_path)
    assert len(expected) > 20 and len(expected) < len(FILES) - 8  # the case list tells both ways
    assert _ours(tmp_path) == expected


def test_a_folder_rule_does_not_ignore_a_file_of_that_name():
    ignored = Ignored()
    ignored.add("", "build/\n")
    assert ignored("build", True) and ignored("src/build", True)
    assert not ignored("build", False)


def test_a_deeper_gitignore_wins_over_its_parent():
    ignored = Ignored()
    ignored.add("", "*.tmp\n")
    ignored.add("pkg", "!keep.tmp\n")
    assert ignored("keep.tmp", False) and not ignored("pkg/keep.tmp", False)
    assert ignored("pkg/other.tmp", False)


def test_a_hostile_gitignore_cannot_stall_a_walk():
    # `a*a*a*a*ab` against a run of `a`: polynomial backtracking for Python's re (the old
    # translation took 1.6 s on 200 characters, 58 s with one more star); RE2 is linear
    spec = parse("*".join("a" * 5) + "b\n")
    started = time.monotonic()
    assert spec.check_file("a" * 300).include is None
    assert time.monotonic() - started < 0.5


def test_a_rule_that_cannot_be_read_is_left_out_and_the_others_still_apply():
    ignored = Ignored()
    ignored.add("", "*.log\n!\n[z-a]\n[[:alpha:]]x\ntrailing\\\nbuild/\n")
    assert ignored("a.log", False) and ignored("build", True)
    assert not ignored("a.txt", False)
