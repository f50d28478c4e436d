"""The server's time limit on runs: one timer for every run (`agentapps.serve.deadlines`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentapps.serve.deadlines import COMPACT, Deadlines


async def limited(deadlines: Deadlines, work: Any) -> str:
    """`work` awaited under the limit, as a served run awaits its skill: what became of it."""
    try:
        async with deadlines.limit_run():
            await work
    except TimeoutError:
        return "timed out"
    except asyncio.CancelledError:
        return "cancelled"
    return "done"


def test_runs_past_the_limit_time_out_in_the_order_they_started_and_the_others_finish() -> None:
    async def scenario() -> list[str]:
        deadlines = Deadlines(0.2, asyncio.get_running_loop())
        runs = [asyncio.ensure_future(limited(deadlines, asyncio.sleep(seconds))) for seconds in (5, 0.01, 5)]
        await asyncio.sleep(0.05)
        late = asyncio.ensure_future(limited(deadlines, asyncio.sleep(0.3)))  # 0.35 s in all: past 0.25
        quick = asyncio.ensure_future(limited(deadlines, asyncio.sleep(0.1)))
        return list(await asyncio.gather(*runs, late, quick))

    assert asyncio.run(scenario()) == ["timed out", "done", "timed out", "timed out", "done"]


def test_a_task_cancelled_by_someone_else_is_cancelled_not_timed_out_even_at_its_limit() -> None:
    async def scenario() -> tuple[str, str, int]:
        deadlines = Deadlines(0.05, asyncio.get_running_loop())
        early = asyncio.ensure_future(limited(deadlines, asyncio.sleep(5)))
        await asyncio.sleep(0.01)
        early.cancel()  # the server stopping, well before the limit
        both = asyncio.ensure_future(limited(deadlines, asyncio.sleep(5)))
        await asyncio.sleep(0)

        def stop_too() -> None:  # at the limit, the server stops as well
            both.cancel()
        asyncio.get_running_loop().call_at(deadlines.queue[-1].deadline, stop_too)
        return await early, await both, both.cancelling()

    early, both, left = asyncio.run(scenario())
    assert (early, both) == ("cancelled", "cancelled")
    assert left == 1  # the limit withdrew its own request; the server's stands


def test_a_run_that_swallows_the_cancellation_finishes_and_its_task_is_not_left_cancelling() -> None:
    async def stubborn() -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            pass

    async def scenario() -> tuple[str, int]:
        deadlines = Deadlines(0.05, asyncio.get_running_loop())
        task = asyncio.ensure_future(limited(deadlines, stubborn()))
        result = await task
        return result, task.cancelling()

    assert asyncio.run(scenario()) == ("done", 0)


@pytest.mark.parametrize("behind", [COMPACT + 10, 5 * COMPACT])
def test_finished_runs_behind_a_long_one_are_swept_and_the_timer_follows_the_oldest_going(behind: int) -> None:
    async def scenario() -> tuple[int, int, list[str]]:
        deadlines = Deadlines(60, asyncio.get_running_loop())
        long = asyncio.ensure_future(limited(deadlines, asyncio.sleep(5)))
        await asyncio.sleep(0)
        for _ in range(behind):
            await limited(deadlines, asyncio.sleep(0))
        queued = len(deadlines.queue)
        long.cancel()
        await asyncio.gather(long, return_exceptions=True)
        assert deadlines.timer is not None
        armed = deadlines.timer.when()
        fresh = [await limited(deadlines, asyncio.sleep(0)) for _ in range(2)]
        return queued, round(armed - deadlines.loop.time()), fresh

    queued, armed_in, fresh = asyncio.run(scenario())
    assert queued <= 2 * COMPACT + 1  # not one entry per finished run
    assert 55 <= armed_in <= 60  # still armed (for the long run's deadline: it re-arms when it fires)
    assert fresh == ["done", "done"]


def test_the_timer_rearms_for_the_next_run_going_when_the_first_ended() -> None:
    async def scenario() -> list[str]:
        deadlines = Deadlines(0.1, asyncio.get_running_loop())
        first = asyncio.ensure_future(limited(deadlines, asyncio.sleep(0.01)))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(limited(deadlines, asyncio.sleep(5)))  # its limit: 0.15 s in
        await asyncio.sleep(0.02)
        assert deadlines.going == 1
        return [await first, await asyncio.wait_for(second, 1)]

    assert asyncio.run(scenario()) == ["done", "timed out"]
