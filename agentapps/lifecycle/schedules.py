"""Keeping time for schedules, in every long-running process that runs them: `agentapps serve`
(`metadata.schedule` and the stored schedules, serve/schedule.py) and `agentapps worker --schedules`
(the stored schedules, cli/worker_schedules.py).

Each process computes the same due times from the same cron expressions; before it runs one it
claims it (`claimed`): a stored schedule's due time by moving the schedule's `lastDue` up to it in
the project's state store (stores/schedules.claim), so of every server and worker sharing the store
exactly one runs it; a skill's `metadata.schedule` through the host's own once-only claim (serve's
coordinator). A stored schedule's times missed while nothing ran are run as its `catchUp` says
when a process first sees it. The plans are read again every `refresh` seconds: a schedule made
or deleted meanwhile starts or stops with no restart.

At most MAX_AT_ONCE scheduled runs go on at once in one process: a due time beyond that waits,
unclaimed, for one of them to end (a per-second schedule of a slow skill, or a hundred missed
times caught up, must not start without bound), so another process with room may claim it first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentapps.core.cron import Cron
from agentapps.errors import AgentAppsError
from agentapps.stores.schedules import Schedule, claim, listed

if TYPE_CHECKING:
    from agentapps.stores.state import StateStore

TICK = 0.25  # seconds between looks at the clock
MAX_AT_ONCE = 16  # scheduled runs going on at once in one process
CLAIM_SECONDS = 3600.0  # how long a host's once-only claim of a metadata schedule's due time lasts

Claim = Callable[[str, float], Awaitable[bool]]  # a host's once-only claim of a key, for `ttl` seconds
Say = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """One scheduled skill run: the skill, when, and with which args."""

    skill: str
    cron: Cron
    args: dict[str, Any]
    stored: Schedule | None = None  # made with schedule-create (None: the skill's metadata)

    @property
    def key(self) -> str:
        return f"stored:{self.stored.id}" if self.stored is not None else self.skill


async def claimed(plan: Plan, due: float, store: StateStore | None, host_claim: Claim | None) -> bool:
    """Whether this process runs `plan` at `due` (False: another server or worker does, or did)."""
    if plan.stored is not None:
        if store is None:
            return False
        return await asyncio.to_thread(claim, store, plan.stored.id, due)
    if host_claim is None:
        return True  # one process, nothing to share it with
    return await host_claim(f"schedule:{plan.key}:{int(due)}", CLAIM_SECONDS)


class Problems:
    """Each broken schedule reported once (not every second), through `say`."""

    def __init__(self, say: Say) -> None:
        self.say, self.seen = say, set[str]()

    def __call__(self, what: str, message: str) -> None:
        if message not in self.seen:
            self.seen.add(message)
            self.say(f"{what} ignored: {message}")


def stored_plans(store: StateStore, accept: Callable[[Schedule], dict[str, Any]],
                 problems: Problems) -> list[Plan]:
    """The stored schedules as plans; `accept` gives a schedule's args as this host runs them, or
    raises AgentAppsError (a skill it does not run, args its params refuse): reported, left out."""
    try:
        kept = listed(store)
    except AgentAppsError as exc:  # e.g. Redis away: try again at the next refresh
        problems("stored schedules", str(exc))
        return []
    found = []
    for each in kept:
        try:
            found.append(Plan(each.skill, Cron.parse(each.cron, skill=each.skill), accept(each), each))
        except AgentAppsError as exc:
            problems(f"schedule '{each.id}'", str(exc))
    return found


Fire = Callable[[Plan, float], Awaitable["asyncio.Future[Any] | None"]]


async def keep_time(plans: Callable[[], list[Plan]], fire: Fire, say: Say, *, refresh: float = 1.0,
                    stopped: Callable[[], bool] = lambda: False, at_once: int = MAX_AT_ONCE) -> None:
    """Call `fire(plan, due)` for each due time of each plan from now on (and for a stored plan's
    missed times its catch-up runs, when first seen), until `stopped()`. `fire` claims and starts
    the run, and returns its task (None: not claimed here); an exception from it (Redis away, say)
    misses that one time, not the next. With `at_once` runs under way, the next waits for one to end."""
    current: list[Plan] = []
    seen: set[str] = set()  # stored schedules whose missed times were looked at
    last = time.time()
    refreshed = 0.0
    room = asyncio.Semaphore(at_once)

    async def safely(plan: Plan, due: float) -> None:
        await room.acquire()
        started = None
        try:
            started = await fire(plan, due)
        except Exception as exc:  # noqa: BLE001 - this time is missed, the next is tried
            say(f"scheduled run of '{plan.skill}' not started: {exc}")
        finally:
            if started is None:
                room.release()
            else:
                started.add_done_callback(lambda _: room.release())

    while not stopped():
        await asyncio.sleep(TICK)
        if stopped():
            return
        now = time.time()
        if now - refreshed >= refresh:
            refreshed = now
            current = plans()  # (a skill's schedule may change without its shape)
            for plan in current:
                if plan.stored is not None and plan.key not in seen:
                    seen.add(plan.key)
                    for missed in plan.stored.missed(last):  # catchUp: once or each
                        await safely(plan, missed)
        for plan in current:
            due = plan.cron.next_after(last)
            while due is not None and due <= now:
                await safely(plan, due)
                due = plan.cron.next_after(due)
        last = now
