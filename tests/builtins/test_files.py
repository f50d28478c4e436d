"""File skills: confined to the project, refusals exit 3 naming the path, caps and atomic writes."""

from __future__ import annotations

import json
import os

import pytest

from agentapps.errors import DeniedError


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
