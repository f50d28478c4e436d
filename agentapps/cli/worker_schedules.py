"""`agentapps worker --schedules`: the project's stored schedules (schedule-create; the state store,
stores/schedules.py) run by a worker, as `agentapps serve` runs them (lifecycle/schedules.py): each
due time once across every server and worker sharing the store, missed times as the schedule's
`catchUp` says, `lastDue` written back. Any skill the project has may be scheduled (a server runs
only those it offers).

Each due time is a run of its own (`served.begin`, with the project's trust rules, as an event's
run) and one run-log record, written by the worker's batcher; on a stop no new run starts, the
ones under way finish and their records are written before the worker exits.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentapps.cli import render
from agentapps.lifecycle.failure import record as record_of
from agentapps.lifecycle.schedules import Plan, Problems, claimed, keep_time, stored_plans
from agentapps.lifecycle.served import begin, invoke
from agentapps.runlog import entry_for

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.runlog.batch import Batcher
    from agentapps.stores.schedules import Schedule
    from agentapps.stores.state import StateStore


@dataclass
class Counts:
    """The scheduled runs a worker started, and how they ended (its summary's `schedules`)."""

    started: int = 0
    succeeded: int = 0
    failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"started": self.started, "succeeded": self.succeeded, "failed": self.failed}


class ScheduledRuns:
    """The clock of the stored schedules and the runs it starts, in one worker."""

    def __init__(self, g: Globals, store: StateStore, log: Batcher | None, label: str,
                 refresh: float = 1.0) -> None:
        self.g, self.store, self.log, self.label, self.refresh = g, store, log, label, refresh
        self.counts = Counts()
        self.running: set[asyncio.Task[None]] = set()
        self.stopping = False
        self.problems = Problems(self.warn)

    def warn(self, text: str) -> None:
        render.warn(f"{self.label}: {text}")

    def stop(self) -> None:
        """No new run starts; the ones under way go on (`run` waits for them)."""
        self.stopping = True

    async def run(self) -> None:
        """Keep time until stopped, then wait for the runs under way."""
        try:
            await keep_time(self.plans, self.fire, self.warn, refresh=self.refresh,
                            stopped=lambda: self.stopping)
        finally:
            if self.running:
                await asyncio.wait(set(self.running))

    def plans(self) -> list[Plan]:
        def accept(each: Schedule) -> dict[str, Any]:
            self.g.lookup.find(each.skill)  # a skill the project no longer has: reported, left out
            return dict(each.args)

        return stored_plans(self.store, accept, self.problems)

    async def fire(self, plan: Plan, due: float) -> asyncio.Future[Any] | None:
        if self.stopping or not await claimed(plan, due, self.store, None):
            return None  # stopping, or another worker or server runs this one
        task = asyncio.ensure_future(self._one(plan, due))
        self.running.add(task)
        task.add_done_callback(self.running.discard)
        return task

    async def _one(self, plan: Plan, due: float) -> None:
        assert plan.stored is not None
        self.counts.started += 1
        run = begin(self.g)  # its own usage, cost, budgets and session key
        error: BaseException | None = None
        try:
            await invoke(run, plan.skill, dict(plan.args), "The worker is stopping.")
        except Exception as exc:  # noqa: BLE001 - a failed run is counted and logged, the clock goes on
            error = exc
        except asyncio.CancelledError as exc:  # a second signal: recorded if the log still can be
            error = exc
            raise
        finally:
            self._ended(plan, due, run, error)

    def _ended(self, plan: Plan, due: float, run: Any, error: BaseException | None) -> None:
        assert plan.stored is not None
        found = None if error is None else record_of(error, run.g.internals.redactor, skill=plan.skill)
        if found is None:
            self.counts.succeeded += 1
        else:
            self.counts.failed += 1
            if not isinstance(error, asyncio.CancelledError):
                self.warn(f"scheduled run of '{plan.skill}' (schedule '{plan.stored.id}') failed: {found['message']}")
        if self.log is None:
            return
        when = datetime.fromtimestamp(due, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            self.log.add(entry_for(skill=plan.skill, args=plan.args, internals=run.g.internals,
                                   exit_code=0 if found is None else int(found["exit_code"]), error=found,
                                   started=run.started, note=f"schedule {plan.stored.id}, due {when}"))
        except Exception as exc:  # noqa: BLE001 - the log never stops the worker
            self.warn(f"the run was not added to the run log: {type(exc).__name__}: {exc}")

