"""The schedule clock every host shares (agentapps/lifecycle/schedules.py): a bound on the scheduled
runs going on at once in one process."""

from __future__ import annotations

import asyncio
from typing import Any

from agentapps.core.cron import Cron
from agentapps.lifecycle.schedules import Plan, keep_time


def test_runs_beyond_the_bound_wait_unclaimed_for_room_and_none_is_lost():
    # a per-second schedule of a skill slower than a second: without a bound its runs pile up
    plan = Plan("slow", Cron.parse("* * * * * *"), {})
    running: list[int] = []
    most = [0]
    claimed: list[float] = []
    said: list[str] = []

    async def fire(p: Plan, due: float) -> asyncio.Future[Any] | None:
        claimed.append(due)  # a host claims only when it has room

        async def run() -> None:
            running.append(1)
            most[0] = max(most[0], len(running))
            await asyncio.sleep(2.5)
            running.pop()

        return asyncio.ensure_future(run())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop_at = loop.time() + 6.5
        await keep_time(lambda: [plan], fire, said.append, stopped=lambda: loop.time() > stop_at, at_once=2)
        await asyncio.sleep(2.6)  # the last runs end

    asyncio.run(main())
    assert most[0] == 2, most  # never more than the bound at once
    assert len(claimed) >= 3 and claimed == sorted(claimed) and len(set(claimed)) == len(claimed)
    assert said == []


def test_an_unclaimed_due_time_frees_its_room_at_once():
    plan = Plan("elsewhere", Cron.parse("* * * * * *"), {})
    fired: list[float] = []

    async def fire(p: Plan, due: float) -> asyncio.Future[Any] | None:
        fired.append(due)
        return None  # another replica runs it

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop_at = loop.time() + 3.5
        await keep_time(lambda: [plan], fire, lambda _: None, stopped=lambda: loop.time() > stop_at, at_once=1)

    asyncio.run(main())
    assert len(fired) >= 3  # each second tried: nothing held a room
