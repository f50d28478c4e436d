"""Warm sandbox processes (sandbox/pool.py): a long-lived host keeps one spare started, and every
Sandbox still gets a process that has run nothing before: nothing of one run is seen by the next."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agentapps.sandbox import Sandbox, pool


async def nothing(name: str, args: Any) -> Any:
    return None


@pytest.fixture
def warm() -> Iterator[None]:
    pool.keep_warm()
    try:
        yield
    finally:
        pool.keep_warm(False)


def run(sandbox: Sandbox, code: str) -> Any:
    result = asyncio.run(sandbox.run(code, nothing))
    assert result.error is None, result.error
    return result.value


def test_a_spare_process_is_ready_before_the_next_sandbox_is_made(warm):
    with Sandbox() as first:
        assert run(first, "return 1") == 1
    spare = pool.spare()  # started when the first sandbox took its process
    assert spare is not None
    assert spare.proc.poll() is None and spare.pid != first.pid
    with Sandbox() as second:
        assert second.pid == spare.pid
        assert run(second, "return 2") == 2


def test_nothing_of_one_run_is_visible_to_the_next(warm):
    with Sandbox(memory={"who": "alice"}) as alice:
        assert run(alice, "globalThis.leak = 'alice-secret'; memory.note = 'alice'; return memory.who") == "alice"
        alice_pid = alice.pid
    with Sandbox(memory={"who": "bob"}) as bob:
        seen = run(bob, "return [typeof globalThis.leak, memory.who, memory.note === undefined]")
        assert seen == ["undefined", "bob", True]
        assert bob.pid != alice_pid


def test_without_keep_warm_no_spare_is_started():
    pool.keep_warm(False)
    with Sandbox() as only:
        run(only, "return 1")
    assert pool.spare() is None


def test_a_run_with_another_memory_seed_gets_a_new_process_and_the_spare_follows_it(warm):
    with Sandbox() as first:
        run(first, "return 1")
    stale = pool.spare()
    with Sandbox(memory={"seed": 1}) as seeded:
        assert seeded.pid != stale.pid and run(seeded, "return memory.seed") == 1
    assert stale.proc.wait(5) is not None  # killed: it had evaluated another prelude
    follower = pool.spare()
    with Sandbox(memory={"seed": 1}) as again:
        assert again.pid == follower.pid and run(again, "return memory.seed") == 1


def test_a_spare_that_died_waiting_is_never_handed_out(warm):
    with Sandbox() as first:
        run(first, "return 1")
    spare = pool.spare()
    assert spare is not None
    spare.kill()
    spare.proc.wait(5)
    with Sandbox() as second:
        assert second.pid != spare.pid
        assert run(second, "return 3") == 3
