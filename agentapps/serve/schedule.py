"""Schedules: a skill with `metadata.schedule` (cron, UTC; or `{cron, args}`) runs on time while
`agentapps serve` runs. Every replica computes the same due times; each due run is claimed through
the coordinator first, so with several replicas on one Redis it happens exactly once. Times that
passed while no server ran are not made up for."""

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
            message = exc.error.message if isinstance(exc, Refused) else str(exc)
            if message not in problems:
                problems.add(message)
                say(f"schedule of '{name}' ignored: {message}")
    return found


def _finished(run: LiveRun) -> None:
    error = run.outcome.get("error") or {}
    say(f"scheduled run of '{run.skill}' {'ok' if run.outcome.get('ok') else 'failed: ' + str(error.get('message'))}")


async def fire(server: Server, plan: Plan, due: float) -> None:
    if not await server.coord.claim(f"schedule:{plan.skill}:{int(due)}", CLAIM_SECONDS):
        return  # another replica runs this one
    run = LiveRun(server, plan.skill, dict(plan.args), owner="schedule").start()
    assert run.task is not None
    server.keep(run.task)
    run.task.add_done_callback(lambda _: _finished(run))


async def run_schedules(server: Server, refresh: float = 1.0) -> None:
    problems: set[str] = set()
    plans: list[Plan] = []
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
            due = plan.cron.next_after(last)
            while due is not None and due <= now:
                try:
                    await fire(server, plan, due)
                except Exception as exc:  # noqa: BLE001 - e.g. Redis away: this time is missed, the next is tried
                    say(f"scheduled run of '{plan.skill}' not started: {exc}")
                due = plan.cron.next_after(due)
        last = now
