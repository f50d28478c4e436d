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
    spare = pool.spare(wait=10)  # started once the snippet that took the first process had finished
    assert spare is not None
    assert spare.proc.poll() is None and spare.pid != first.pid
    with Sandbox() as second:
        assert run(second, "return 2") == 2
        assert second.pid == spare.pid


def test_the_taken_spare_is_replaced_after_the_snippet_that_took_it_not_while_it_runs(warm):
    # a process starting beside the first snippet competes with it for the CPU: it waits for the end
    with Sandbox() as first:
        run(first, "return 1")
    taken = pool.spare(wait=10)
    seen: list[Any] = []

    async def look(name: str, args: Any) -> Any:
        seen.append(pool.spare())  # while the snippet runs
        return None

    with Sandbox() as second:
        result = asyncio.run(second.run("await ctx.manager.invoke('look', {}); return 2", look))
        assert result.error is None and result.value == 2, result.error
        assert second.pid == taken.pid and seen == [None]
        after = pool.spare(wait=10)
        assert after is not None and after.pid not in (taken.pid, None) and after.proc.poll() is None


def test_in_a_warm_host_a_run_without_snippets_takes_no_process(warm):
    with Sandbox() as first:
        run(first, "return 1")
    spare = pool.spare(wait=10)
    for _ in range(3):  # an agent that answers without code, three times
        with Sandbox(memory={"n": 1}) as unused:
            assert unused.pid is None
    assert pool.spare() is spare and spare.proc.poll() is None


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


def test_runs_with_other_memory_seeds_take_the_spare_and_each_sees_only_its_own(warm):
    # the seed is set after the spare is taken: runs whose args differ (a server's, a worker's)
    # still find a process ready, and none sees another's memory
    with Sandbox() as first:
        run(first, "memory.left = 'by the first run'; return 1")
    for seed in (1, 2):
        spare = pool.spare(wait=10)
        with Sandbox(memory={"seed": seed}) as seeded:
            assert run(seeded, "return [memory.seed, memory.left === undefined]") == [seed, True]
            assert seeded.pid == spare.pid
    with Sandbox() as unseeded:
        assert run(unseeded, "return JSON.stringify(memory)") == "{}"


def test_a_spare_that_died_waiting_is_never_handed_out(warm):
    with Sandbox() as first:
        run(first, "return 1")
    spare = pool.spare(wait=10)
    assert spare is not None
    spare.kill()
    spare.proc.wait(5)
    with Sandbox() as second:
        assert second.pid != spare.pid
        assert run(second, "return 3") == 3
