"""Specification of the crash-safe file primitives in agentapps.core.atomic."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentapps.core.atomic import (
    FileLock,
    cleanup_temp_files,
    make_private_dirs,
    read_json,
    write_atomic,
)
from agentapps.errors import LockTimeoutError, StoreCorruptError

REPO = Path(__file__).resolve().parents[2]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_write_atomic_round_trips_and_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    write_atomic(target, b'{"v": 1}')
    assert target.read_bytes() == b'{"v": 1}'
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert _temp_files(tmp_path) == []


def test_write_atomic_creates_private_file_and_parent_dirs(tmp_path: Path) -> None:
    target = tmp_path / "project" / ".agent-apps" / "state" / "k.json"
    write_atomic(target, b"x" * 300_000)
    assert target.read_bytes() == b"x" * 300_000
    assert _mode(target) == 0o600
    for directory in (tmp_path / "project", target.parent.parent, target.parent):
        assert _mode(directory) == 0o700, directory


def test_write_atomic_applies_the_requested_mode_exactly(tmp_path: Path) -> None:
    target = tmp_path / "shared.txt"
    write_atomic(target, b"hi", mode=0o640)
    assert _mode(target) == 0o640


def test_write_atomic_failure_leaves_no_temp_file_and_no_change(tmp_path: Path) -> None:
    target = tmp_path / "occupied"
    target.mkdir()
    (target / "inside").write_text("keep")
    with pytest.raises(OSError):
        write_atomic(target, b"cannot replace a non-empty directory")
    assert _temp_files(tmp_path) == []
    assert (target / "inside").read_text() == "keep"


def test_cleanup_removes_only_old_temp_files(tmp_path: Path) -> None:
    old = tmp_path / ".k.json.aaaa.tmp"
    fresh = tmp_path / ".k.json.bbbb.tmp"
    unrelated = [tmp_path / ".lock", tmp_path / "k.json", tmp_path / "visible.tmp"]
    for path in [old, fresh, *unrelated]:
        path.write_text("x")
    an_hour_ago = time.time() - 3600
    for path in [old, *unrelated]:
        os.utime(path, (an_hour_ago, an_hour_ago))

    assert cleanup_temp_files(tmp_path, older_than=60) == 1
    assert not old.exists()
    assert fresh.exists()
    assert all(path.exists() for path in unrelated)
    assert cleanup_temp_files(tmp_path, older_than=0) == 1
    assert not fresh.exists()


def test_cleanup_of_a_missing_directory_removes_nothing(tmp_path: Path) -> None:
    assert cleanup_temp_files(tmp_path / "absent") == 0


def test_read_json_returns_the_parsed_value(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text('{"a": [1, 2.5, null, "é"]}', encoding="utf-8")
    assert read_json(path) == {"a": [1, 2.5, None, "é"]}


@pytest.mark.parametrize(
    "content",
    [b'{"a": 1,', b"", b"\xff\xfe\x00garbage", b'{"a": 1} trailing', b"{'single': 'quotes'}"],
    ids=["truncated", "empty", "not-utf8", "trailing-data", "python-repr"],
)
def test_read_json_reports_corrupt_file_and_leaves_it_byte_identical(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    with pytest.raises(StoreCorruptError) as info:
        read_json(path)
    message = str(info.value)
    assert str(path) in message
    assert "left untouched" in message
    assert "remove the file" in message
    assert "\n" not in message
    assert path.read_bytes() == content


def test_read_json_of_a_missing_file_is_not_corruption(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "absent.json")


HOLD_LOCK = """
import sys
from pathlib import Path
from agentapps.core.atomic import FileLock
with FileLock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()
"""


@pytest.mark.slow
def test_lock_held_by_another_process_times_out_then_frees_on_exit(tmp_path: Path) -> None:
    lock_path = tmp_path / "state" / ".lock"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "locked\n"
        started = time.monotonic()
        with pytest.raises(LockTimeoutError) as info, FileLock(lock_path, timeout=0.2):
            pytest.fail("took a lock another process holds")
        assert 0.2 <= time.monotonic() - started < 2.0
        assert str(lock_path) in str(info.value)
        assert "\n" not in str(info.value)
        holder.stdin.close()
        assert holder.wait(timeout=10) == 0
    with FileLock(lock_path, timeout=2):
        pass


def test_lock_excludes_threads_of_one_process(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".lock")
    counter = tmp_path / "counter"
    counter.write_text("0")

    def increment() -> None:
        for _ in range(15):
            with lock:
                value = int(counter.read_text())
                time.sleep(0.0005)  # widen the race window a lost update would need
                counter.write_text(str(value + 1))

    threads = [threading.Thread(target=increment) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.read_text() == "60"


def test_lock_is_released_when_the_block_raises(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    with pytest.raises(RuntimeError), FileLock(lock_path):
        raise RuntimeError("boom")
    with FileLock(lock_path, timeout=0.1):
        pass
    assert lock_path.exists()


@pytest.mark.parametrize(
    ("blocker", "as_symlink"),
    [
        (".agent-apps/state", False),
        (".agent-apps", False),
        (".agent-apps/state", True),
        (".agent-apps", True),
    ],
    ids=[
        "file-at-folder",
        "file-at-ancestor",
        "symlink-to-file-at-folder",
        "symlink-to-file-at-ancestor",
    ],
)
def test_private_dirs_refuse_a_file_where_a_folder_belongs_and_leave_it(
    tmp_path: Path, blocker: str, as_symlink: bool
) -> None:
    project = tmp_path / "project"
    (project / blocker).parent.mkdir(parents=True, exist_ok=True)
    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    if as_symlink:
        (project / blocker).symlink_to(mine)
    else:
        (project / blocker).write_text("mine\n")
    with pytest.raises(StoreCorruptError) as info:
        make_private_dirs(project / ".agent-apps" / "state")
    assert str(info.value).startswith(
        f"{project / blocker}: is a file where agentapps keeps a folder"
    )
    assert (project / blocker).read_text() == "mine\n"
    assert (project / blocker).is_symlink() == as_symlink


MAKE_STATE_FOLDERS = """
import sys
from pathlib import Path
from agentapps.core.atomic import make_private_dirs
base, count = Path(sys.argv[1]), int(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
for n in range(count):
    make_private_dirs(base / f"project{n}" / ".agent-apps" / "state")
"""


def test_eight_processes_creating_the_same_state_folders_at_once_all_succeed(
    tmp_path: Path,
) -> None:
    """8 processes, released together, each create the same fresh `projectN/.agent-apps/state`
    folders in the same order, so they keep meeting at the folder being made: none is told a
    folder another one just made is a file, and every folder is private. (Before the fix one was
    told so in each of 30 runs.)"""
    count = 600
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with contextlib.ExitStack() as stack:
        workers = []
        for _ in range(8):
            worker = stack.enter_context(
                subprocess.Popen(
                    [sys.executable, "-c", MAKE_STATE_FOLDERS, str(tmp_path), str(count)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                )
            )
            stack.callback(worker.kill)  # runs before the exit that waits for it
            workers.append(worker)
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        results = [worker.communicate(timeout=60) for worker in workers]
    errors = [
        err.strip().splitlines()[-1]
        for worker, (_, err) in zip(workers, results, strict=True)
        if worker.returncode != 0
    ]
    assert errors == []
    for n in range(count):
        project = tmp_path / f"project{n}"
        for directory in (project, project / ".agent-apps", project / ".agent-apps" / "state"):
            assert _mode(directory) == 0o700, directory
