"""The run lock (agentapps.stores.runlock) on Redis: held while its holder lives, renewed before its
expiry, refused to another holder with who holds it, taken over from a dead holder on this host."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import pytest

from agentapps.errors import RunBusyError
from agentapps.stores.runlock import RedisRunLock
from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures

TTL = float(os.environ.get("AGENTAPPS_TEST_RUNLOCK_TTL", "0.6"))  # seconds


@pytest.fixture
def link(redis_project: Any) -> Any:  # noqa: F811 - the fixture imported above
    from agentapps.stores.config import link_for

    return link_for(redis_project.project.boot().globals)


def test_a_held_lock_is_renewed_past_its_expiry_and_refused_to_another_taker(link):
    lock = RedisRunLock.take(link, 7, ttl=TTL)
    try:
        time.sleep(TTL * 2.5)
        assert link.client.pttl(lock.key) > 0  # renewed by its holder's thread
        with pytest.raises(RunBusyError) as refused:
            RedisRunLock.take(link, 7, ttl=TTL)
        assert f"process {os.getpid()} on {socket.gethostname()}" in refused.value.message
    finally:
        lock.release()
    assert link.client.get(lock.key) is None
    RedisRunLock.take(link, 7, ttl=TTL).release()  # free again


def test_a_lock_of_a_dead_process_on_this_host_is_taken_over_and_another_hosts_is_not(link):
    key = link.key("checkpoint-lock", "run-8")
    gone = 2**22 + 17  # above pid_max's default: no such process
    link.client.set(key, f"{socket.gethostname()}:{gone}:x", px=60_000)
    taken = RedisRunLock.take(link, 8, ttl=TTL)
    assert link.client.get(key).decode() == taken.token
    taken.release()

    link.client.set(key, f"elsewhere:{gone}:x", px=60_000)  # its pid cannot be checked from here
    with pytest.raises(RunBusyError, match=f"process {gone} on elsewhere"):
        RedisRunLock.take(link, 8, ttl=TTL)
    link.client.delete(key)
