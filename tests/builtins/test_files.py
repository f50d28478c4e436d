"""File skills: confined to the project, refusals exit 3 naming the path, caps and atomic writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from agentapps.errors import AgentAppsError, DeniedError


@pytest.fixture
def files(project):
    project.write("docs/a.txt", "one\ntwo\nthree\n")
    project.write("src/m.py", "print('x')\n")
    return project


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "docs/../../x", "/proc/self/environ", "/dev/zero", "link-out/secret.txt",
     "file-link", "~/.ssh/id_rsa"],
)
def test_file_read_refuses_paths_outside_the_project(files, tmp_path, path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, files.root / "link-out")
    os.symlink(outside / "secret.txt", files.root / "file-link")
    result = files.cli("run", "file-read", "--path", path)
    if path == "~/.ssh/id_rsa":  # a literal folder named "~" inside the project: missing, not home
        assert result.returncode == 2 and "no such file" in result.stderr
        return
    assert result.returncode == 3, result.stderr
    assert "Refused path" in result.stderr and path in result.stderr
    assert "secret" not in result.stdout


def test_file_read_offset_limit_and_truncation_marker(files):
    assert files.invoke("file-read", {"path": "docs/a.txt"}) == "one\ntwo\nthree\n"
    text = files.invoke("file-read", {"path": "docs/a.txt", "offset": 1, "limit": 1})
    assert text.startswith("two\n") and "truncated" in text and "offset=2" in text


def test_file_read_of_a_line_over_the_byte_cap_shows_its_head_and_how_to_read_on(files):
    cap = 256 * 1024
    (files.root / "long.txt").write_text("first\n" + "x" * 300_000 + "\nlast\n" + "y" * 300_000)
    reads = []
    for offset in ("0", "1", "2", "3"):
        result = files.cli("run", "file-read", "--path", "long.txt", "--offset", offset)
        assert result.returncode == 0, result.stderr
        reads.append(result.stdout)
    assert reads[0] == ("first\n\n[... truncated: long.txt is 600012 bytes; showed lines 1-1. "
                        "Read on with offset=1.]\n")
    assert reads[1] == ("x" * cap + "\n[... truncated: line 2 of long.txt is 300001 bytes long; showed only its "
                        f"first {cap} bytes. Read the next line with offset=2.]\n")
    assert reads[2] == "last\n\n[... truncated: long.txt is 600012 bytes; showed lines 3-3. Read on with offset=3.]\n"
    assert reads[3] == ("y" * cap + "\n[... truncated: line 4 of long.txt is 300000 bytes long; showed only its "
                        f"first {cap} bytes. Read the next line with offset=4.]\n")


@pytest.mark.parametrize("path", [".agent-apps/state/x.json", ".git/config", "../escape.txt"])
def test_file_write_refuses_protected_and_outside_paths(files, path):
    files.write("caller.skill.py", 'frontmatter = {"name": "caller", "allowed-tools": "file-write", '
                '"metadata": {"params": {"type": "object"}}}\n\nasync def run(ctx, args):\n'
                '    return await ctx.manager.invoke("file-write", args)\n')
    with pytest.raises(DeniedError, match="Refused path"):
        files.invoke("caller", {"path": path, "content": "x"})
    assert not (files.root / path).exists() or path == ".git/config"


def test_file_write_is_atomic_creates_folders_and_keeps_mode(files):
    target = files.root / "out" / "deep" / "r.txt"
    result = files.invoke("file-write", {"path": "out/deep/r.txt", "content": "hello"})
    assert result == {"path": "out/deep/r.txt", "bytes": 5}
    assert target.read_text() == "hello"
    target.chmod(0o640)
    files.invoke("file-write", {"path": "out/deep/r.txt", "content": "more", "append": True})
    assert target.read_text() == "hellomore" and (target.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["r.txt"]  # no temp files left behind


def test_file_write_is_hidden_from_wildcard_callers(files):
    files.write("star.skill.py", 'frontmatter = {"name": "star", "allowed-tools": "file-*", '
                '"metadata": {"params": {"type": "object"}}}\n\nasync def run(ctx, args):\n'
                '    return await ctx.manager.invoke(args["call"], args["with"])\n')
    assert files.invoke("star", {"call": "file-read", "with": {"path": "docs/a.txt"}}).startswith("one")
    with pytest.raises(DeniedError, match="hidden"):
        files.invoke("star", {"call": "file-write", "with": {"path": "x.txt", "content": "x"}})


def test_file_list_globs_and_skips_symlinks_out(files, tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "leak.py").write_text("x")
    os.symlink(tmp_path / "o" / "leak.py", files.root / "src" / "leak.py")
    out = json.loads(files.cli("run", "file-list", "--glob", "**/*.py").stdout)
    assert out == ["src/m.py"]
    everything = files.invoke("file-list", {})
    assert "docs/a.txt" in everything and not any(p.startswith(".agent-apps") for p in everything)


@pytest.mark.parametrize(("glob", "expected"), [
    ("*.py", ["a.py", "src/deep/test_b.py", "src/deep/x.py", "src/m.py", "src/test_a.py"]),  # no `/`: any depth
    ("src/*.py", ["src/m.py", "src/test_a.py"]),  # `*` stays within the folder
    ("src/**/test_*.py", ["src/deep/test_b.py", "src/test_a.py"]),  # `**/` may be no folder at all
    ("./src//deep/*", ["src/deep/test_b.py", "src/deep/x.py"]),
    ("docs", ["docs/a.txt"]),  # a folder: the files under it
    ("#notes.md", ["#notes.md"]),  # a character here, not a comment
    ("!bang.txt", ["!bang.txt"]),
])
def test_file_list_globs_as_gitignore_lines(files, glob, expected):
    for rel in ("a.py", "src/test_a.py", "src/deep/x.py", "src/deep/test_b.py", "#notes.md", "!bang.txt"):
        files.write(rel, "x")
    assert sorted(files.invoke("file-list", {"glob": glob})) == expected


@pytest.mark.parametrize("glob", ["[z-a].py", "src\\", "[[:alpha:]]"])
def test_a_glob_that_cannot_be_read_is_refused_with_one_line(files, glob):
    result = files.cli("run", "file-list", "--glob", glob)
    assert result.returncode == 2 and "cannot be read" in result.stderr and "Traceback" not in result.stderr


def test_reading_a_huge_sparse_file_stops_at_once(files):
    """20 GB that are mostly a hole: reads stop at the first NUL instead of walking the file."""
    path = files.root / "sparse.log"
    with open(path, "wb") as handle:
        handle.write(b"hello\n" * 2000)
        handle.truncate(20 * 1024**3)
    for args in ({"path": "sparse.log"}, {"path": "sparse.log", "offset": 5000}, {"path": "sparse.log", "limit": 1}):
        started = time.monotonic()
        text = files.invoke("file-read", args)
        assert time.monotonic() - started < 1.0
        assert text.startswith("hello\n" if args.get("limit") else "[binary file sparse.log")


def test_one_read_scans_a_bounded_number_of_bytes(tmp_path):
    from agentapps.errors import LimitError
    from agentapps.files.text import read_lines

    (tmp_path / "long").write_bytes(b"a" * 5000 + b"\n" + b"line\n" * 400)
    (tmp_path / "many").write_bytes(b"line\n" * 400)
    with open(tmp_path / "long", "rb") as handle:
        head = read_lines(handle, "f", offset=0, limit=None, max_bytes=100, scan=1000)
    assert head.startswith("a" * 100) and "line 1 of f is over 1000 bytes long" in head
    with open(tmp_path / "many", "rb") as handle, pytest.raises(LimitError, match="beyond the first"):
        read_lines(handle, "f", offset=300, limit=None, max_bytes=100, scan=1000)


FLIPPER = """
import itertools, os, sys, time
root, outside = sys.argv[1], sys.argv[2]
docs, parked = os.path.join(root, "docs"), os.path.join(root, "parked")
end = time.monotonic() + float(sys.argv[3])
for n in itertools.count():
    if time.monotonic() > end:
        break
    os.rename(docs, parked)
    try:
        os.symlink(outside, docs)
    except FileExistsError:  # a write made docs/ again while it was parked: keep it aside
        os.rename(docs, os.path.join(root, f"made-{n}"))
        os.symlink(outside, docs)
    time.sleep(0.0001)
    os.unlink(docs)
    for k in itertools.count():
        try:
            os.rename(parked, docs)
            break
        except OSError:  # a write made docs/ again meanwhile (perhaps more than once): keep it aside
            os.rename(docs, os.path.join(root, f"made-again-{n}-{k}"))
    time.sleep(0.0001)
"""


def test_a_folder_swapped_for_a_symlink_mid_operation_never_lets_a_read_or_write_out(files, tmp_path):
    """A real race: another process flips docs/ between a folder and a symlink out of the project
    while reads and writes run; nothing outside is ever read or written."""
    from agentapps.files.ops import read_text, write_text

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("SECRET OUTSIDE\n")
    flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(files.root), str(outside), "1.5"])
    seen: set[str] = set()
    try:
        while flipper.poll() is None:
            for op in ("read", "write"):
                try:
                    if op == "read":
                        seen.add(read_text(files.root, "docs/a.txt"))
                    else:
                        write_text(files.root, "docs/w.txt", "written")
                except AgentAppsError:
                    seen.add("refused")
                except OSError as exc:  # a raw error is a defect too, but an escape is worse
                    seen.add(f"raw {exc!r}")
    finally:
        assert flipper.wait(10) == 0
    assert "SECRET OUTSIDE\n" not in seen
    assert not [s for s in seen if s.startswith("raw ")]
    assert {"one\ntwo\nthree\n", "refused"} <= seen  # the race really ran both ways
    assert sorted(p.name for p in outside.iterdir()) == ["a.txt"]
