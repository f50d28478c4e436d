"""Compiled skill code is cached by the hash of the exact source that was checked."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from agentapps.tools.bytecode import compiled

pytestmark = pytest.mark.cold_cache  # these tests are about the cache: HOME starts without one


def _entries(home: Path) -> list[Path]:
    return [p for p in (home / ".cache" / "agentapps" / "code").rglob("*") if p.is_file()]


def test_code_is_compiled_once_and_reused(project):
    source, path = b"VALUE = 41 + 1\n", project.root / "x.skill.py"
    first = compiled(source, path)
    assert len(_entries(project.home)) == 1
    again = compiled(source, path)
    namespace: dict = {}
    exec(again, namespace)  # noqa: S102 - the compiled test source
    assert namespace["VALUE"] == 42 and again.co_filename == str(path) and first.co_code == again.co_code


def test_an_entry_is_only_ever_the_compilation_of_identical_bytes(project):
    path = project.root / "x.skill.py"
    compiled(b"VALUE = 1\n", path)
    (entry,) = _entries(project.home)
    entry.write_bytes(marshal.dumps(compile("VALUE = 666\n", str(path), "exec")))  # forged for those bytes
    namespace: dict = {}
    exec(compiled(b"VALUE = 2\n", path), namespace)  # noqa: S102 - other bytes: another key, never the forged one
    assert namespace["VALUE"] == 2


def test_a_damaged_entry_is_compiled_again(project):
    path = project.root / "x.skill.py"
    compiled(b"VALUE = 3\n", path)
    (entry,) = _entries(project.home)
    entry.write_bytes(b"\x00garbage")
    namespace: dict = {}
    exec(compiled(b"VALUE = 3\n", path), namespace)  # noqa: S102 - the compiled test source
    assert namespace["VALUE"] == 3
    assert marshal.loads(entry.read_bytes()).co_filename == str(path)  # rewritten


def test_the_cache_can_be_switched_off(project, monkeypatch):
    monkeypatch.setenv("AGENTAPPS_CACHE_DIR", "off")
    compiled(b"VALUE = 4\n", project.root / "x.skill.py")
    assert not (project.home / ".cache").exists()
