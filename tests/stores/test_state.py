"""Specification of the key-value state store: both backends, key encoding, crashes, concurrency."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentapps.core.atomic import cleanup_temp_files
from agentapps.errors import (
    ConflictError,
    LimitError,
    LockTimeoutError,
    StoreCorruptError,
    UsageError,
)
from agentapps.stores.state import (
    FileStateStore,
    MemoryStateStore,
    StateStore,
    decode_name,
    encode_key,
)

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("state_worker.py")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "project" / ".agent-apps" / "state"


@pytest.fixture(params=["memory", "file", "redis"])
def store(request: pytest.FixtureRequest, root: Path) -> Iterator[StateStore]:
    if request.param == "memory":
        yield MemoryStateStore()
    elif request.param == "file":
        yield FileStateStore(root)
    else:
        yield from _redis_store()


def _redis_store() -> Iterator[StateStore]:
    from agentapps.secrets import Redactor
    from agentapps.stores.link import RedisLink
    from agentapps.stores.redisstate import RedisStateStore
    from tests.support.redis_server import URL, drop_namespace, namespace, require_server

    require_server()
    name = namespace()
    link = RedisLink(URL, name, Redactor())
    link.connect()
    try:
        yield RedisStateStore(link)
    finally:
        link.close()
        drop_namespace(name)


def wait(store: StateStore, key: Any, timeout: float) -> Any:
    return asyncio.run(store.wait(key, timeout))


def _spawn(*args: object, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *map(str, args)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _all_files(directory: Path) -> set[Path]:
    return {p for p in directory.rglob("*") if p.is_file()}


# --- behaviour common to both backends -------------------------------------------------------

VALUES: list[Any] = [{"theme": "dark", "n": [1, 2.5, None]}, [], "text", 0, -3.5, True, None]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_set_then_get_round_trips_json_values(store: StateStore, value: Any) -> None:
    store.set("user:alice:prefs", value)
    assert store.get("user:alice:prefs") == value
    assert store.list() == ["user:alice:prefs"]


def test_missing_key_reads_as_none(store: StateStore) -> None:
    assert store.get("nothing-here") is None
    assert store.list() == []


def test_set_overwrites_and_get_returns_a_copy(store: StateStore) -> None:
    store.set("k", {"items": [1]})
    store.get("k")["items"].append(2)
    assert store.get("k") == {"items": [1]}
    store.set("k", "replaced")
    assert store.get("k") == "replaced"


def test_delete_reports_whether_the_key_existed(store: StateStore) -> None:
    store.set("k", None)
    assert store.delete("k") is True
    assert store.delete("k") is False
    assert store.get("k") is None
    assert store.list() == []


def test_list_is_sorted_and_filtered_by_prefix(store: StateStore) -> None:
    for key in ["user:bob:x", "job:1", "user:alice:b", "user:alice:a", "user:alicex"]:
        store.set(key, 1)
    assert store.list() == ["job:1", "user:alice:a", "user:alice:b", "user:alicex", "user:bob:x"]
    assert store.list("user:alice:") == ["user:alice:a", "user:alice:b"]
    assert store.list("zzz") == []


@pytest.mark.parametrize(
    ("stored", "expect", "wins"),
    [
        (None, None, True),  # None means "absent"
        (5, None, False),
        (5, 5, True),
        (5, 4, False),
        ({"a": 2, "b": [1]}, {"b": [1], "a": 2}, True),  # key order is not JSON equality
        (1.0, 1, True),  # JSON has a single number type
        ({"a": [1.0, {"b": 2.0, "c": 2.5}]}, {"a": [1, {"b": 2, "c": 2.5}]}, True),  # at any depth
        ([2.5, "x"], [2.5, "x"], True),
        (1, True, False),  # but true is not 1
        ("1", 1, False),
        (None, 0, False),
    ],
)
def test_compare_and_swap_uses_json_equality(
    store: StateStore, stored: Any, expect: Any, wins: bool
) -> None:
    if stored is not None:
        store.set("counter", stored)
    if wins:
        store.set("counter", "new", expect=expect)
        assert store.get("counter") == "new"
    else:
        with pytest.raises(ConflictError, match="'counter'"):
            store.set("counter", "new", expect=expect)
        assert store.get("counter") == stored


def test_a_time_to_live_makes_the_key_vanish(store: StateStore) -> None:
    store.set("lease", "me", ttl=0.15)
    store.set("plain", 1)
    assert store.get("lease") == "me" and store.list() == ["lease", "plain"]
    time.sleep(0.25)
    assert store.get("lease") is None and store.list() == ["plain"]
    store.set("lease", "you", expect=None)  # an expired lease is absent: it can be taken
    assert store.get("lease") == "you"
    time.sleep(0.2)
    assert store.get("lease") == "you"  # a write without ttl stays


def _holds_itself() -> dict[str, Any]:
    value: dict[str, Any] = {"n": 1.0}
    value["self"] = [value]
    return value


@pytest.mark.parametrize("value", [object(), {1, 2}, float("nan"), {"x": float("inf")}, b"raw", _holds_itself()])
def test_non_json_values_are_refused(store: StateStore, value: Any) -> None:
    with pytest.raises(UsageError, match="JSON"):
        store.set("k", value)
    with pytest.raises(UsageError, match="JSON"):
        store.set("k", 1, expect=value)
    assert store.list() == []


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "1-256"),
        ("k" * 257, "1-256"),
        ("a\x00b", "control"),
        ("line\nbreak", "control"),
        ("tab\t", "control"),
        ("del\x7f", "control"),
        ("c1\x85", "control"),
        ("\ud800", "Unicode"),
        (42, "string"),
    ],
)
def test_invalid_keys_are_refused_everywhere(store: StateStore, key: Any, problem: str) -> None:
    for call in (
        lambda: store.get(key),
        lambda: store.set(key, 1),
        lambda: store.delete(key),
        lambda: wait(store, key, timeout=0.01),
    ):
        with pytest.raises(UsageError, match=problem):
            call()
    assert store.list() == []


def test_wait_returns_at_once_when_the_key_exists(store: StateStore) -> None:
    store.set("job:1:done", {"ok": True})
    started = time.monotonic()
    assert wait(store, "job:1:done", timeout=5) == {"ok": True}
    assert time.monotonic() - started < 0.5


def test_wait_sees_a_key_set_later_by_another_thread(store: StateStore) -> None:
    timer = threading.Timer(0.3, lambda: store.set("job:2:done", None))
    timer.start()
    try:
        started = time.monotonic()
        assert wait(store, "job:2:done", timeout=5) is None
        assert time.monotonic() - started >= 0.25
    finally:
        timer.join()


def test_wait_times_out_with_limit_error(store: StateStore) -> None:
    started = time.monotonic()
    with pytest.raises(LimitError, match="'never'"):
        wait(store, "never", timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 1.0


# --- key encoding: file names stay inside the root --------------------------------------------

ENCODING_TABLE = [
    ("plain", "plain.json"),
    ("user:alice:prefs", "user%3Aalice%3Aprefs.json"),
    ("../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd.json"),
    ("/abs", "%2Fabs.json"),
    ("a/b", "a%2Fb.json"),
    ("a\\b", "a%5Cb.json"),
    ("..", "%2E..json"),
    (".", "%2E.json"),
    (".lock", "%2Elock.json"),
    ("con", "con.json"),
    ("v1.2_x-y", "v1.2_x-y.json"),
    ("100% sure", "100%25%20sure.json"),
    ("~home", "%7Ehome.json"),
    ("naïve", "na%C3%AFve.json"),
    ("ключ", "%D0%BA%D0%BB%D1%8E%D1%87.json"),
    ("🔑", "%F0%9F%94%91.json"),
]


@pytest.mark.parametrize(("key", "name"), ENCODING_TABLE)
def test_key_encoding_table(key: str, name: str) -> None:
    assert encode_key(key) == name
    assert decode_name(name) == key


@pytest.mark.parametrize("key", [k for k, _ in ENCODING_TABLE])
def test_hostile_keys_stay_inside_the_root_and_round_trip(tmp_path: Path, key: str) -> None:
    root = tmp_path / "project" / ".agent-apps" / "state"
    store = FileStateStore(root)
    store.set(key, {"key": key})
    files = _all_files(tmp_path)
    assert files == {root / ".lock", root / encode_key(key)}
    assert FileStateStore(root).get(key) == {"key": key}
    assert store.list() == [key]
    assert store.delete(key) is True
    assert _all_files(tmp_path) == {root / ".lock"}


@pytest.mark.parametrize("key", ["k" * 256, "é" * 256, "/" * 256, "🔑" * 200 + "a"])
def test_long_keys_get_short_hashed_names_and_still_list(root: Path, key: str) -> None:
    store = FileStateStore(root)
    other = key[:-1] + "Z"  # same long prefix, different key
    store.set(key, 1)
    store.set(other, 2)
    names = [encode_key(key), encode_key(other)]
    assert names[0] != names[1]
    assert all(len(name.encode()) <= 200 and "~" in name for name in names)
    assert (store.get(key), store.get(other)) == (1, 2)
    assert store.list() == sorted([key, other])
    assert _all_files(root.parent.parent.parent) == {root / ".lock", *(root / n for n in names)}


def test_list_ignores_foreign_and_temporary_files(root: Path) -> None:
    store = FileStateStore(root)
    store.set("real", 1)
    for name in ["README.txt", "foo bar.json", "%zz.json", "%2e.json", ".real.json.ab.tmp", "x~y"]:
        (root / name).write_text("{}")
    assert store.list() == ["real"]


# --- file backend: persistence, permissions, corruption, locking -----------------------------


def test_file_store_persists_across_instances_with_private_permissions(root: Path) -> None:
    FileStateStore(root).set("k", [1, 2])
    assert FileStateStore(root).get("k") == [1, 2]
    assert stat.S_IMODE((root / "k.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / ".lock").stat().st_mode) == 0o600
    for directory in (root, root.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


@pytest.mark.parametrize("content", [b'{"key": "k", "value": [1,', b"[1, 2]", b'{"key": "j"}'])
def test_corrupt_key_file_is_reported_never_reset(root: Path, content: bytes) -> None:
    store = FileStateStore(root)
    store.set("k", "good")
    path = root / "k.json"
    path.write_bytes(content)
    for call in (
        lambda: store.get("k"),
        lambda: store.set("k", "overwrite"),
        lambda: store.set("k", "overwrite", expect="good"),
            lambda: wait(store, "k", timeout=0.1),
    ):
        with pytest.raises(StoreCorruptError) as info:
            call()
        assert str(path) in str(info.value) and "left untouched" in str(info.value)
        assert path.read_bytes() == content
    assert store.list() == ["k"]
    assert store.delete("k") is True  # deleting is the way out
    store.set("k", "fresh")
    assert store.get("k") == "fresh"


def test_construction_cleans_only_stale_temp_files(root: Path) -> None:
    root.mkdir(parents=True)
    stale, fresh = root / ".k.json.old1.tmp", root / ".k.json.new1.tmp"
    stale.write_text("partial")
    fresh.write_text("in progress")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    FileStateStore(root)
    assert not stale.exists()
    assert fresh.exists()


@pytest.mark.slow
def test_writes_wait_for_the_lock_held_by_another_process(root: Path) -> None:
    FileStateStore(root).set("k", "before")
    with _spawn("hold-lock", root, "-", stdin=subprocess.PIPE) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "locked\n"
        store = FileStateStore(root, lock_timeout=0.2)
        with pytest.raises(LockTimeoutError, match=r"\.lock"):
            store.set("k", "during")
        with pytest.raises(LockTimeoutError):
            store.delete("k")
        assert store.get("k") == "before"  # reads never block
        holder.stdin.close()
        assert holder.wait(timeout=10) == 0
    store.set("k", "after")
    assert store.get("k") == "after"


@pytest.mark.slow
def test_concurrent_compare_and_swap_increments_lose_nothing(tmp_path: Path) -> None:
    """8 processes x 25 read-modify-write increments give exactly 200, three runs in a row."""
    for run in range(3):
        root = tmp_path / f"run{run}" / ".agent-apps" / "state"
        go = tmp_path / f"go{run}"
        workers = [_spawn("cas", root, "counter", 25, go) for _ in range(8)]
        go.touch()
        conflicts = 0
        for worker in workers:
            with worker:
                out, err = worker.communicate(timeout=120)
                assert worker.returncode == 0, err
                conflicts += int(out)
        assert FileStateStore(root).get("counter") == 200, f"run {run}"
        assert conflicts > 0, "the workers never contended; the test proved nothing"


@pytest.mark.slow
def test_sigkill_during_writes_never_leaves_a_torn_file(root: Path) -> None:
    """100 SIGKILLs at random moments of a ~200 KB rewrite loop: old or new version, never torn."""
    rng = random.Random()
    path = root / "big.json"
    last = -1
    kills_leaving_temp = 0
    with _spawn("hammers", root, "big", stdin=subprocess.PIPE) as hammers:
        assert hammers.stdin is not None and hammers.stdout is not None
        for _ in range(100):
            temps_before = set(root.glob(".*.tmp")) if root.exists() else set()
            hammers.stdin.write("go\n")
            hammers.stdin.flush()
            ready, pid = hammers.stdout.readline().split()  # a hammer forked by `hammers`
            assert ready == "ready"
            time.sleep(rng.uniform(0, 0.03))
            os.kill(int(pid), signal.SIGKILL)
            assert hammers.stdout.readline() == "dead\n"
            last, kills_leaving_temp = _after_a_kill(path, root, temps_before, last, kills_leaving_temp)
        hammers.stdin.close()
        assert hammers.wait(timeout=10) == 0, hammers.stderr and hammers.stderr.read()
    assert last > 0, "the writer never completed a write"
    assert kills_leaving_temp > 0, "no kill landed mid-write; the test proved nothing"
    assert cleanup_temp_files(root, older_than=0) > 0
    assert sorted(p.name for p in root.iterdir()) == [".lock", "big.json"]


def _after_a_kill(path: Path, root: Path, temps_before: set[Path], last: int,
                  kills_leaving_temp: int) -> tuple[int, int]:
    """The file after a writer was killed: the old or a newer whole version, never torn."""
    if path.exists():
        data = json.loads(path.read_bytes())  # a torn file would fail here
        counter = data["value"]["counter"]
        assert data == {"key": "big", "value": _big_value(counter)}
        assert counter >= last  # the old or a newer version, never an older one
        last = counter
    else:
        assert last == -1, "a written key vanished"
    kills_leaving_temp += bool(set(root.glob(".*.tmp")) - temps_before)
    return last, kills_leaving_temp


def _big_value(counter: int) -> dict[str, Any]:
    """What state_worker.big_value writes: padding tied to the counter, so a mix cannot pass."""
    return {"counter": counter, "pad": chr(ord("a") + counter % 26) * 200_000}


@pytest.mark.slow
def test_wait_sees_a_key_set_by_another_process(root: Path) -> None:
    store = FileStateStore(root)
    started = time.monotonic()
    with _spawn("set-after", root, "job:9:done", 0.3, '{"rows": 3}') as setter:
        assert store.get("job:9:done") is None
        assert wait(store, "job:9:done", timeout=20) == {"rows": 3}
        assert time.monotonic() - started >= 0.3
        assert setter.wait(timeout=10) == 0


@pytest.mark.parametrize("shape", ["deeply nested", "a folder"])
def test_a_file_that_cannot_be_state_is_reported_never_a_traceback(root: Path, shape: str) -> None:
    store = FileStateStore(root)
    store.set("other", 1)
    path = root / "k.json"
    if shape == "a folder":
        path.mkdir()
    else:
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    for call in (lambda: store.get("k"), lambda: store.set("k", 1), lambda: wait(store, "k", timeout=0.1)):
        with pytest.raises(StoreCorruptError) as info:
            call()
        assert str(path) in str(info.value) and "left untouched" in str(info.value)
    assert path.exists() and store.get("other") == 1


def test_file_values_are_written_with_declared_secrets_redacted(root: Path) -> None:
    from agentapps.secrets import Redactor

    redactor = Redactor()
    redactor.register("TOKEN", "s3cr3t-value")
    store = FileStateStore(root, redact=redactor.redact_data)
    store.set("k", {"note": "token s3cr3t-value", "s3cr3t-value": [1]})
    text = (root / "k.json").read_text()
    assert "s3cr3t-value" not in text
    assert store.get("k") == {"note": "token [redacted:TOKEN]", "[redacted:TOKEN]": [1]}


@pytest.mark.parametrize("where", [".agent-apps/state", ".agent-apps"])
def test_a_file_where_the_state_folder_belongs_is_named_not_a_traceback(project, where):
    import shutil

    shutil.rmtree(project.root / ".agent-apps", ignore_errors=True)
    (project.root / where).parent.mkdir(parents=True, exist_ok=True)
    (project.root / where).write_text("mine\n")
    result = project.cli("run", "state-set", "--key", "k", "--value", "1")
    assert result.returncode == 1
    assert f"{project.root / where}: is a file where agentapps keeps a folder" in result.stderr
    assert "NotADirectoryError" not in result.stderr and (project.root / where).read_text() == "mine\n"


def test_a_file_where_the_sessions_folder_belongs_is_named(project):
    (project.root / ".agent-apps").mkdir(exist_ok=True)
    (project.root / ".agent-apps" / "sessions").write_text("mine\n")
    result = project.cli("sessions", "list")
    assert result.returncode == 1 and "is a file where agentapps keeps a folder" in result.stderr


@pytest.mark.parametrize(("key", "says"), [
    ("job\x07bell", "contains a control character"), ("job\n2", "contains a control character"),
    ("job\x85", "contains a control character"), ("", "must be 1-"), (7, "must be a string, not int"),
    ("\ud800", "is not valid Unicode text"),
])
def test_a_key_that_cannot_be_a_state_key_is_refused_and_nothing_is_written(tmp_path, key, says):
    store = FileStateStore(tmp_path / "state")
    with pytest.raises(UsageError, match=says):
        store.set(key, 1)
    folder = tmp_path / "state"
    assert not folder.exists() or [p for p in folder.iterdir() if p.name != ".lock"] == []
    store.set("job:é", 1)
    assert store.get("job:é") == 1
