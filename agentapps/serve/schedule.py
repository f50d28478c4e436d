"""Schedules: a skill with `metadata.schedule` (cron, UTC; or `{cron, args}`), and every schedule
made at run time with `schedule-create` (kept in the project's state store: stores/schedules.py),
runs on time while `agentapps serve` runs. Every replica computes the same due times; each due run
is claimed through the coordinator first, so with several replicas on one Redis it happens exactly
once. Times that passed while no server ran are not made up for, except by a stored schedule's
`catchUp` (`once`, `each`), which a server applies when it first sees the schedule."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentapps.core.cron import Cron
from agentapps.errors import AgentAppsError
from agentapps.serve.http import Refused
from agentapps.serve.runs import LiveRun
from agentapps.stores.schedules import Schedule, listed, ran

if TYPE_CHECKING:
    from agentapps.serve.state import Server

TICK = 0.25  # seconds between looks at the clock
CLAIM_SECONDS = 3600.0


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


def say(text: str) -> None:
    sys.stderr.write(f"agentapps serve: {text}\n")
    sys.stderr.flush()


def plans_of(server: Server, problems: set[str]) -> list[Plan]:
    """The schedules of the offered skills; a broken one is reported once and left out."""
    from agentapps.serve.calls import checked_args

    found = []
    for name in sorted(server.exposure.offers):
        try:
            tool = server.g.lookup.find(name)
            spec = tool.metadata.get("schedule")
            if not spec:
                continue
            text = spec.get("cron") if isinstance(spec, dict) else spec
            args = checked_args(server, tool, spec.get("args") if isinstance(spec, dict) else {})
            found.append(Plan(name, Cron.parse(str(text), skill=name), args))
        except (AgentAppsError, Refused) as exc:
            _ignored(problems, f"schedule of '{name}'", exc)
    return found + _stored(server, problems)


def _ignored(problems: set[str], what: str, exc: AgentAppsError | Refused) -> None:
    message = exc.error.message if isinstance(exc, Refused) else str(exc)
    if message not in problems:
        problems.add(message)
        say(f"{what} ignored: {message}")


def _stored(server: Server, problems: set[str]) -> list[Plan]:
    """The schedules schedule-create kept, for skills this server offers."""
    from agentapps.serve.calls import checked_args
    from agentapps.stores.state import store_for

    found = []
    try:
        kept = listed(store_for(server.g))
    except AgentAppsError as exc:  # e.g. Redis away: the metadata schedules still run
        _ignored(problems, "stored schedules", exc)
        return []
    for each in kept:
        try:
            if each.skill not in server.exposure.offers:
                raise Refused(404, AgentAppsError(f"'{each.skill}' is not a skill this server offers."))
            tool = server.g.lookup.find(each.skill)
            found.append(Plan(each.skill, Cron.parse(each.cron, skill=each.skill),
                              checked_args(server, tool, each.args), each))
        except (AgentAppsError, Refused) as exc:
            _ignored(problems, f"schedule '{each.id}'", exc)
    return found


def _finished(run: LiveRun) -> None:
    error = run.outcome.get("error") or {}
    say(f"scheduled run of '{run.skill}' {'ok' if run.outcome.get('ok') else 'failed: ' + str(error.get('message'))}")


async def fire(server: Server, plan: Plan, due: float) -> None:
    if not await server.coord.claim(f"schedule:{plan.key}:{int(due)}", CLAIM_SECONDS):
        return  # another replica runs this one
    if plan.stored is not None:  # what a server started later must not run again
        from agentapps.stores.state import store_for

        await asyncio.to_thread(ran, store_for(server.g), plan.stored.id, due)
    run = LiveRun(server, plan.skill, dict(plan.args), owner="schedule").start()
    assert run.task is not None
    server.keep(run.task)
    run.task.add_done_callback(lambda _: _finished(run))


async def run_schedules(server: Server, refresh: float = 1.0) -> None:
    problems: set[str] = set()
    plans: list[Plan] = []
    seen: set[str] = set()  # stored schedules whose missed times were looked at
    last = time.time()
    refreshed = 0.0
    while True:
        await asyncio.sleep(TICK)
        now = time.time()
        if now - refreshed >= refresh:
            refreshed = now
            try:
                server.exposure.refresh()
            except AgentAppsError:
                pass
            plans = plans_of(server, problems)  # (a skill's schedule may change without its shape)
            for plan in plans:
                if plan.stored is not None and plan.key not in seen:
                    seen.add(plan.key)
                    for missed in plan.stored.missed(last):  # catchUp: once or each
                        await _fire_safely(server, plan, missed)
        for plan in plans:
            due = plan.cron.next_after(last)
            while due is not None and due <= now:
                await _fire_safely(server, plan, due)
                due = plan.cron.next_after(due)
        last = now


async def _fire_safely(server: Server, plan: Plan, due: float) -> None:
    try:
        await fire(server, plan, due)
    except Exception as exc:  # noqa: BLE001 - e.g. Redis away: this time is missed, the next is tried
        say(f"scheduled run of '{plan.skill}' not started: {exc}")
