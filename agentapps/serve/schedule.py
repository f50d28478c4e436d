"""Schedules under `agentapps serve`: a skill with `metadata.schedule` (cron, UTC; or `{cron,
args}`), and every schedule made at run time with `schedule-create` (kept in the project's state
store: stores/schedules.py) whose skill the server offers. The clock, the catch-up of a stored
schedule's missed times and the once-per-due-time claim are every host's (lifecycle/schedules.py):
a metadata schedule's due time is claimed through the coordinator, so with several replicas on one
Redis it runs exactly once; a stored one's through the store, shared with `agentapps worker
--schedules` too."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

from agentapps.core.cron import Cron
from agentapps.errors import AgentAppsError
from agentapps.lifecycle.schedules import Plan, Problems, claimed, keep_time, stored_plans
from agentapps.serve.http import Refused
from agentapps.serve.runs import LiveRun

if TYPE_CHECKING:
    from agentapps.serve.state import Server
    from agentapps.stores.schedules import Schedule

__all__ = ["Plan", "fire", "plans_of", "run_schedules"]


def say(text: str) -> None:
    sys.stderr.write(f"agentapps serve: {text}\n")
    sys.stderr.flush()


def plans_of(server: Server, problems: Problems) -> list[Plan]:
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
        except AgentAppsError as exc:
            problems(f"schedule of '{name}'", str(exc))
        except Refused as exc:
            problems(f"schedule of '{name}'", exc.error.message)
    return found + _stored(server, problems)


def _stored(server: Server, problems: Problems) -> list[Plan]:
    """The schedules schedule-create kept, for skills this server offers."""
    from agentapps.serve.calls import checked_args
    from agentapps.stores.state import store_for

    def accept(each: Schedule) -> dict[str, Any]:
        if each.skill not in server.exposure.offers:
            raise AgentAppsError(f"'{each.skill}' is not a skill this server offers.")
        try:
            return checked_args(server, server.g.lookup.find(each.skill), each.args)
        except Refused as exc:
            raise exc.error from None

    try:
        store = store_for(server.g)
    except AgentAppsError as exc:
        problems("stored schedules", str(exc))
        return []
    return stored_plans(store, accept, problems)


def _finished(run: LiveRun) -> None:
    error = run.outcome.get("error") or {}
    say(f"scheduled run of '{run.skill}' {'ok' if run.outcome.get('ok') else 'failed: ' + str(error.get('message'))}")


async def fire(server: Server, plan: Plan, due: float) -> asyncio.Future[Any] | None:
    """Claim this due time and start its run (its task; None: another replica or a worker runs it)."""
    from agentapps.stores.state import store_for

    store = store_for(server.g) if plan.stored is not None else None
    if not await claimed(plan, due, store, server.coord.claim):
        return None
    run = LiveRun(server, plan.skill, dict(plan.args), owner="schedule").start()
    assert run.task is not None
    server.keep(run.task)
    run.task.add_done_callback(lambda _: _finished(run))
    return run.task


async def run_schedules(server: Server, refresh: float = 1.0) -> None:
    problems = Problems(say)

    def plans() -> list[Plan]:
        try:
            server.exposure.refresh()
        except AgentAppsError:
            pass
        return plans_of(server, problems)

    await keep_time(plans, lambda plan, due: fire(server, plan, due), say, refresh=refresh)
