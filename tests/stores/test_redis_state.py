"""The Redis state store against a real server: atomic CAS across processes, time-to-live,
state-wait by notification (no polling, no lost write), namespaces, and a server that goes away."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentapps.errors import ConfigError, LimitError, StoreUnavailableError
from agentapps.secrets import Redactor
from agentapps.stores.link import RedisLink
from agentapps.stores.redisstate import RedisStateStore
from tests.support.redis_server import URL, PrivateRedis, drop_namespace, namespace, require_server

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("state_worker.py")


def open_store(url: str, name: str, **env: str) -> RedisStateStore:
    link = RedisLink(url, name, Redactor())
    link.connect()
    return RedisStateStore(link)


@pytest.fixture
def ns() -> Iterator[str]:
    require_server()
    name = namespace()
    yield name
    drop_namespace(name)


@pytest.fixture
def private(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path / "redis").start()
    yield server
    server.stop()


def commands(url: str, name: str) -> int:
    """How many times the server has run command `name` so far."""
    import redis

    stats = redis.Redis.from_url(url).info("commandstats")
    return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))


@pytest.mark.slow
def test_eight_processes_of_cas_increments_on_one_key_lose_nothing(ns: str) -> None:
    go = Path(os.environ.get("TMPDIR", "/tmp")) / f"go-{ns}"
    procs = [subprocess.Popen([sys.executable, str(WORKER), "cas", f"redis:{URL}#{ns}", "counter", "50", go],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}) for _ in range(8)]
    go.touch()
    try:
        conflicts = 0
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            conflicts += int(out)
    finally:
        go.unlink()
    assert open_store(URL, ns).get("counter") == 400
    assert conflicts > 0, "the processes never contended; the test proved nothing"


def test_a_compare_and_swap_retried_after_a_lost_answer_is_not_a_conflict(ns: str) -> None:
    """The write token: the same write applied twice (its first answer lost) succeeds once."""
    store = open_store(URL, ns)
    store.set("k", 1)
    args = [store._key("k")]
    first = store.link.call(store._set, args, '2', '', 'equal', '1', 'tok', 'ch')
    again = store.link.call(store._set, args, '2', '', 'equal', '1', 'tok', 'ch')
    other = store.link.call(store._set, args, '3', '', 'equal', '1', 'other', 'ch')
    assert (first, again, other) == (1, 1, 0)
    assert store.get("k") == 2


def test_time_to_live_removes_the_key_on_the_server(ns: str) -> None:
    store = open_store(URL, ns)
    store.set("lease", "me", ttl=0.15)
    store.set("plain", 1)
    assert store.get("lease") == "me" and store.list() == ["lease", "plain"]
    time.sleep(0.25)
    assert store.get("lease") is None and store.list() == ["plain"]
    store.set("lease", "you", expect=None, ttl=5)  # an expired lease can be taken again
    store.set("lease", "you")  # a write without ttl makes it permanent
    ttl = store.link.client.pttl(store._key("lease"))
    assert ttl == -1


def test_wait_is_woken_by_a_write_and_does_not_poll(private: PrivateRedis) -> None:
    store = open_store(private.url, "waits")
    before = commands(private.url, "hget")
    timer = threading.Timer(1.2, lambda: open_store(private.url, "waits").set("job", {"rows": 3}))
    timer.start()
    started = time.monotonic()
    try:
        assert asyncio.run(store.wait("job", timeout=10)) == {"rows": 3}
    finally:
        timer.join()
    assert 1.1 <= time.monotonic() - started < 3
    # one read before waiting, one after subscribing's confirmation, one after the write: never a poll
    assert commands(private.url, "hget") - before <= 4


def test_a_write_racing_the_start_of_a_wait_is_never_missed(ns: str) -> None:
    store, writer = open_store(URL, ns), open_store(URL, ns)

    async def race(i: int) -> Any:
        loop = asyncio.get_running_loop()
        loop.call_soon(lambda: threading.Thread(target=writer.set, args=(f"k{i}", i)).start())
        return await store.wait(f"k{i}", timeout=3)

    assert [asyncio.run(race(i)) for i in range(30)] == list(range(30))


def test_a_wait_times_out_with_a_limit_error(ns: str) -> None:
    with pytest.raises(LimitError, match="'never'"):
        asyncio.run(open_store(URL, ns).wait("never", timeout=0.2))


def test_a_waiter_survives_a_server_restart(private: PrivateRedis) -> None:
    store = open_store(private.url, "restart")
    store.set("before", 1)

    def restart_then_write() -> None:
        time.sleep(0.3)
        private.kill()
        time.sleep(0.5)
        private.start()
        open_store(private.url, "restart").set("after", "done")

    thread = threading.Thread(target=restart_then_write)
    thread.start()
    try:
        assert asyncio.run(store.wait("after", timeout=15)) == "done"
    finally:
        thread.join()
    assert store.get("before") == 1  # the append-only file kept what the server acknowledged


def test_a_server_that_stays_away_fails_the_call_after_the_reconnect_budget(
        private: PrivateRedis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTAPPS_REDIS_RECONNECT", "0.5")
    store = open_store(private.url, "away")
    private.kill()
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as info:
        store.get("k")
    assert time.monotonic() - started < 5
    assert info.value.exit_code == 1 and f"127.0.0.1:{private.port}" in str(info.value)
    with pytest.raises(StoreUnavailableError):
        asyncio.run(store.wait("k", timeout=30))


def test_an_unreachable_server_at_start_is_exit_2_naming_host_and_port_never_the_password() -> None:
    link = RedisLink("redis://:pa55-w0rd-secret@127.0.0.1:1/0", "x", Redactor())
    with pytest.raises(StoreUnavailableError) as info:
        link.connect()
    assert info.value.exit_code == 2
    assert "127.0.0.1:1" in str(info.value) and "pa55-w0rd-secret" not in str(info.value)


def test_a_wrong_password_is_a_configuration_error_that_never_shows_it(tmp_path: Path) -> None:
    server = PrivateRedis(tmp_path / "auth", "--requirepass", "right-password-123").start()
    try:
        for url in (f"redis://:wrong-password-456@127.0.0.1:{server.port}/0", server.url):
            with pytest.raises(ConfigError) as info:
                open_store(url, "auth")
            assert "wrong-password-456" not in str(info.value) and "right-password-123" not in str(info.value)
        good = open_store(f"redis://:right-password-123@127.0.0.1:{server.port}/0", "auth")
        good.set("k", 1)
        assert good.get("k") == 1
        assert "right-password-123" not in good.link.redactor.redact("url has right-password-123")
    finally:
        server.stop()


def test_projects_share_keys_by_name_never_by_path(ns: str) -> None:
    one, same, other = open_store(URL, ns), open_store(URL, ns), open_store(URL, ns + "-b")
    try:
        one.set("shared", 1)
        assert same.get("shared") == 1 and other.get("shared") is None and other.list() == []
    finally:
        drop_namespace(ns + "-b")


def test_values_are_stored_with_declared_secrets_redacted(ns: str) -> None:
    redactor = Redactor()
    redactor.register("TOKEN", "s3cr3t-value")
    link = RedisLink(URL, ns, redactor)
    link.connect()
    store = RedisStateStore(link, redact=redactor.redact_data)
    store.set("k", {"note": "token s3cr3t-value"})
    raw = link.client.hget(store._key("k"), "v")
    assert b"s3cr3t-value" not in raw and store.get("k") == {"note": "token [redacted:TOKEN]"}
