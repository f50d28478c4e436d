"""The on-disk index cache: reused across processes, never stale, never fatal."""

from __future__ import annotations

import json
import os
import time

import pytest

from agentapps.tools import index_cache


def _skill(project, desc):
    return project.write("s.skill.md", f"---\nname: s\ndescription: {desc}\n---\nBody {desc}\n")


def test_a_second_process_reuses_the_cache_and_sees_edits(project):
    path = _skill(project, "first")
    assert json.loads(project.cli("describe", "s", "--json").stdout)["description"] == "first"
    cache = index_cache.cache_path(project.root)
    assert cache is not None and cache.parent == project.home / ".cache" / "agentapps"
    cached = json.loads(cache.read_text())["files"]
    assert str(path) in cached and cached[str(path)][2]["frontmatter"]["description"] == "first"
    time.sleep(0.01)
    _skill(project, "second-version")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 50_000_000))
    assert json.loads(project.cli("describe", "s", "--json").stdout)["description"] == "second-version"


def test_a_corrupt_cache_is_ignored_and_rewritten(project):
    _skill(project, "ok")
    project.cli("list")
    cache = index_cache.cache_path(project.root)
    cache.write_text("{not json")
    result = project.cli("describe", "s", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["description"] == "ok"
    assert json.loads(cache.read_text())["version"] == index_cache.VERSION


def test_cache_can_be_switched_off(project):
    _skill(project, "ok")
    project.cli("list", AGENTAPPS_CACHE_DIR="off")
    assert not (project.home / ".cache").exists()


def test_values_that_do_not_survive_json_are_not_cached(project):
    path = project.write("d.skill.md", "---\nname: d\nmetadata:\n  since: 2024-01-01\n---\nx\n")
    project.cli("list")
    cached = json.loads(index_cache.cache_path(project.root).read_text())["files"]
    assert str(path) not in cached
    assert project.cli("describe", "d").returncode == 0


CORRUPT = {
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "not an object": "[1, 2, 3]",
    "files is a list": json.dumps({"version": 1, "root": "ROOT", "files": []}),
    "entry not a triple": json.dumps({"version": 1, "root": "ROOT", "files": {"PATH": 5}}),
    "entry of wrong types": json.dumps({"version": 1, "root": "ROOT", "files": {"PATH": ["MTIME", "SIZE", {}]}}),
    "tool with a bad name": json.dumps({"version": 1, "root": "ROOT", "files": {"PATH": ["MTIME", "SIZE", {
        "name": 7, "kind": "markdown", "frontmatter": {}, "path": "PATH", "body": "", "body_line": 1,
        "uri": None, "mtime": 1}]}}),
    "metadata not a mapping": json.dumps({"version": 1, "root": "ROOT", "files": {"PATH": ["MTIME", "SIZE", {
        "name": "s", "kind": "markdown", "frontmatter": {"metadata": 3}, "path": "PATH", "body": "",
        "body_line": 1, "uri": None, "mtime": 1}]}}),
    "invalid utf-8": b"\xff\xfe\x00garbage",
}


@pytest.mark.parametrize("content", list(CORRUPT.values()), ids=list(CORRUPT))
def test_any_corrupt_cache_is_ignored_and_rewritten(project, content):
    path = _skill(project, "ok")
    cache = index_cache.cache_path(project.root)
    cache.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        st = os.stat(path)  # entries that match the file on disk, so they would be used if trusted
        content = (content.replace("ROOT", str(project.root)).replace("PATH", str(path))
                   .replace('"MTIME"', str(st.st_mtime_ns)).replace('"SIZE"', str(st.st_size)).encode())
    cache.write_bytes(content)
    result = project.cli("describe", "s", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["description"] == "ok"
    assert json.loads(cache.read_text())["files"][str(path)][2]["name"] == "s"  # rewritten


def test_a_folder_where_the_cache_file_should_be_is_ignored(project):
    _skill(project, "ok")
    cache = index_cache.cache_path(project.root)
    cache.mkdir(parents=True)
    result = project.cli("describe", "s", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["description"] == "ok"
