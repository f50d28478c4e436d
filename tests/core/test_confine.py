"""Traversal table for resolve_in_project: what stays inside the project and what is refused."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from agentapps.core.confine import resolve_in_project
from agentapps.errors import DeniedError

OUTSIDE = "outside the project"
SYSTEM = "a system path"
SPECIAL = "not a regular file or directory"
PROTECTED = "protected folder"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """tmp/proj with files, symlinks in and out, a fifo; tmp/proj-evil and tmp/outside*."""
    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    (root / "~").mkdir()
    (root / "~" / "x").write_text("tilde")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]")
    (root / ".gitignore").write_text("")
    (root / ".agent-apps" / "state").mkdir(parents=True)
    (root / ".agent-apps" / "state" / "x").write_text("{}")
    (tmp_path / "outside.txt").write_text("secret")
    (tmp_path / "outside_dir").mkdir()
    (tmp_path / "outside_dir" / "x.txt").write_text("secret")
    (tmp_path / "proj-evil").mkdir()
    (tmp_path / "proj-evil" / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", root / "link_out_file")
    os.symlink(tmp_path / "outside_dir", root / "link_out_dir")
    os.symlink("../proj-evil", root / "link_sibling")
    os.symlink("a.txt", root / "link_in")
    os.symlink("sub", root / "link_in_dir")
    os.symlink(".git", root / "link_to_git")
    os.symlink(tmp_path / "nowhere" / "missing", root / "dangling_out")
    os.symlink("missing_inside", root / "dangling_in")
    os.symlink("/dev/null", root / "link_devnull")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.mkfifo(root / "fifo")
    return root


# (user path, for_write, expected): expected is "ok:<path relative to root>" or an error fragment.
# {root} is the project root, {tmp} its parent.
CASES = [
    ("a.txt", False, "ok:a.txt"),
    ("sub/b.txt", False, "ok:sub/b.txt"),
    ("sub/./b.txt", False, "ok:sub/b.txt"),
    ("sub/../a.txt", False, "ok:a.txt"),
    (".", False, "ok:."),
    ("../..", False, OUTSIDE),
    ("..", False, OUTSIDE),
    ("../outside.txt", False, OUTSIDE),
    ("sub/../../outside.txt", False, OUTSIDE),
    ("sub/../../outside.txt", True, OUTSIDE),
    ("/etc/passwd", False, OUTSIDE),
    ("/etc/passwd", True, OUTSIDE),
    ("{root}/a.txt", False, "ok:a.txt"),
    ("{root}/sub/new.txt", True, "ok:sub/new.txt"),
    ("{root}/../outside.txt", False, OUTSIDE),
    ("~", False, "ok:~"),
    ("~/x", False, "ok:~/x"),
    ("~root/x", False, "ok:~root/x"),
    ("%2e%2e/x", False, "ok:%2e%2e/x"),
    ("%2e%2e%2f%2e%2e%2fetc%2fpasswd", False, "ok:%2e%2e%2f%2e%2e%2fetc%2fpasswd"),
    ("..%2f..%2foutside.txt", False, "ok:..%2f..%2foutside.txt"),
    ("a.txt\x00.png", False, "NUL byte"),
    ("", False, "empty"),
    ("  ", False, "empty"),
    ("/proc/self/environ", False, SYSTEM),
    ("/dev/zero", False, SYSTEM),
    ("/dev/null", True, SYSTEM),
    ("/sys/kernel", False, SYSTEM),
    ("../proj-evil/secret.txt", False, OUTSIDE),
    ("{root}-evil/secret.txt", False, OUTSIDE),
    ("link_sibling/secret.txt", False, OUTSIDE),
    ("link_out_file", False, OUTSIDE),
    ("link_out_file", True, OUTSIDE),
    ("link_out_dir", False, OUTSIDE),
    ("link_out_dir/x.txt", False, OUTSIDE),
    ("link_out_dir/new.txt", True, OUTSIDE),
    ("link_in", False, "ok:a.txt"),
    ("link_in_dir/b.txt", False, "ok:sub/b.txt"),
    ("link_in_dir/../a.txt", False, "ok:a.txt"),
    ("dangling_out", False, OUTSIDE),
    ("dangling_out", True, OUTSIDE),
    ("dangling_in", True, "ok:missing_inside"),
    ("link_devnull", False, SYSTEM),
    ("loop_a", False, "symlink loop"),
    ("loop_a/x", True, "symlink loop"),
    ("fifo", False, SPECIAL),
    ("fifo", True, SPECIAL),
    (".agent-apps/state/x", False, "ok:.agent-apps/state/x"),
    (".agent-apps/state/x", True, PROTECTED),
    (".agent-apps/state/new.json", True, PROTECTED),
    (".agent-apps", True, PROTECTED),
    (".git/config", False, "ok:.git/config"),
    (".git/config", True, PROTECTED),
    ("sub/../.git/config", True, PROTECTED),
    ("link_to_git/config", True, PROTECTED),
    ("{root}/.git/hooks/pre-commit", True, PROTECTED),
    (".gitignore", True, "ok:.gitignore"),
    ("sub/.git/config", True, "ok:sub/.git/config"),
    (".GIT-notes/x", True, "ok:.GIT-notes/x"),
    ("new/dir/file.txt", True, "ok:new/dir/file.txt"),
    ("new/../file.txt", True, "ok:file.txt"),
    (".", True, "project root itself"),
]


@pytest.mark.parametrize(("user_path", "for_write", "expected"), CASES)
def test_traversal_table(project: Path, user_path: str, for_write: bool, expected: str) -> None:
    path = user_path.format(root=project, tmp=project.parent)
    if expected.startswith("ok:"):
        got = resolve_in_project(project, path, for_write=for_write)
        assert got == project / expected[3:]
        assert got.is_absolute()
    else:
        with pytest.raises(DeniedError) as info:
            resolve_in_project(project, path, for_write=for_write)
        message = str(info.value)
        assert expected in message
        assert repr(path) in message
        assert "\n" not in message
        assert info.value.exit_code == 3


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 20


def test_root_given_through_a_symlink_resolves_to_real_paths(project: Path) -> None:
    alias = project.parent / "alias"
    os.symlink(project, alias)
    assert resolve_in_project(alias, "a.txt") == project / "a.txt"
    with pytest.raises(DeniedError):
        resolve_in_project(alias, "../outside.txt")


def test_sibling_prefix_is_not_inside_even_by_absolute_path(project: Path) -> None:
    sibling = Path(str(project) + "-evil") / "secret.txt"
    assert str(sibling).startswith(str(project))  # a string-prefix check would let it through
    with pytest.raises(DeniedError, match=OUTSIDE):
        resolve_in_project(project, str(sibling))


def test_socket_file_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)  # AF_UNIX paths are limited to ~108 bytes: bind a relative name
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind("sock")
        with pytest.raises(DeniedError, match=SPECIAL):
            resolve_in_project(project, "sock")


def test_symlink_swapped_out_is_refused_on_next_call(project: Path) -> None:
    (project / "swap").symlink_to("a.txt")
    assert resolve_in_project(project, "swap") == project / "a.txt"
    (project / "swap").unlink()
    (project / "swap").symlink_to(project.parent / "outside.txt")
    with pytest.raises(DeniedError, match=OUTSIDE):
        resolve_in_project(project, "swap")
