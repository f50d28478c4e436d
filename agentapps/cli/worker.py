"""`agentapps worker TOPIC --group NAME --handler SKILL`: handle a Redis topic's events in a
consumer group, each through the full pipeline, until --max-events, SIGTERM (143) or SIGINT (130).

A signal stops the taking of events; the ones in flight finish and are acknowledged, then the
worker exits (a second signal exits at once; what was in flight is redelivered later). Progress
and a summary go to stderr; `--json` prints the summary object on stdout (after a second signal
too: `ok` false, and `abandoned` counts the events taken but not acknowledged).

Each event is a run of its own (`served.begin`): its own usage, cost, budgets and session key, and
one run-log record (skill: the handler; exit code 0 or the error's; a failed delivery's error line
says what became of the event: retried, or moved to the dead-letter topic). Records are written in
batches by one writer task, so the log costs the worker little throughput; the ones still pending
are written before it exits (not after a second signal, which exits at once).

`--schedules` also runs the project's stored schedules (cli/worker_schedules.py); without a TOPIC
the worker runs only them, needing no Redis unless the project's state store is on it.

An agent handler checkpoints each event's run (agentapps.agent.checkpoint, keyed by group, topic
and event id); a failed event delivered again resumes from its checkpoint, and that try's record
holds only what it spent.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentapps.cli import render
from agentapps.context.manager import invoke_root
from agentapps.errors import AgentAppsError, UsageError
from agentapps.lifecycle.failure import record as record_of
from agentapps.lifecycle.served import begin
from agentapps.runlog import enabled, entry_for, spent_between
from agentapps.runlog.batch import Batcher
from agentapps.runlog.slots import AGENT_TOTALS
from agentapps.tools.loader import RUN_STARTED

if TYPE_CHECKING:
    from agentapps.cli.worker_schedules import ScheduledRuns
    from agentapps.context.context import Context
    from agentapps.events.consumer import Tally, Worker
    from agentapps.lifecycle.served import ServedRun

PROGRESS_EVERY = 5.0  # seconds between progress lines


def run_worker(topic: str | None, *, group: str | None, handler: str | None, concurrency: int,
               max_events: int | None, visibility: float | None, max_deliveries: int | None, as_json: bool,
               quiet: bool, schedules: bool = False) -> int:
    from agentapps.cli.streams import redacted_output
    from agentapps.secrets import Redactor

    if topic is None:
        if not schedules:
            raise UsageError("Name a TOPIC (with --group and --handler), or pass --schedules.")
        if group is not None or handler is not None or max_events is not None:
            raise UsageError("--group, --handler and --max-events go with a TOPIC.")
    elif group is None or handler is None:
        raise UsageError("A TOPIC needs --group and --handler.")
    if concurrency < 1 or (max_events is not None and max_events < 1):
        raise UsageError("--concurrency and --max-events must be at least 1.")
    if visibility is not None and not 0.1 <= visibility <= 86_400:
        raise UsageError("--visibility-timeout must be from 0.1 to 86400 seconds.")
    if max_deliveries is not None and not 1 <= max_deliveries <= 1000:
        raise UsageError("--max-deliveries must be from 1 to 1000.")
    redactor = Redactor()
    with redacted_output(redactor, verbose=False):
        return _serve(topic, group or "", handler or "", concurrency, max_events, visibility, max_deliveries,
                      as_json, quiet, redactor, schedules)


def _serve(topic: str | None, group_name: str, handler: str, concurrency: int, max_events: int | None,
           visibility: float | None, max_deliveries: int | None, as_json: bool, quiet: bool,
           redactor: Any, schedules: bool) -> int:
    from agentapps.boot import bootstrap
    from agentapps.cli.worker_schedules import ScheduledRuns
    from agentapps.events.consumer import Worker
    from agentapps.events.group import Group, consumer_name
    from agentapps.sandbox.pool import keep_warm
    from agentapps.stores.config import link_for, stores_config
    from agentapps.stores.state import store_for

    keep_warm()  # each event's agent run finds its sandbox process started
    root = bootstrap()
    g = root.globals
    g.internals.redactor = redactor
    log = Batcher(g.config.log_dir) if enabled() else None  # run-log records, written in batches
    worker: Worker | None = None
    clock: ScheduledRuns | None = None
    head: dict[str, Any] = {}
    label = "worker schedules"
    lines = _Lines(label, quiet, redactor)
    if topic is not None:
        tool = g.lookup.resolve(handler)
        _register_secrets(g, tool)
        _check_handler(g, tool)
        config = stores_config(g)
        link = link_for(g)  # exit 2 when the server cannot be reached now
        link.set_reconnect(0.5)  # the worker waits out longer outages itself, without blocking its handlers
        group = Group(link, topic, group_name, consumer_name(), visibility=visibility or config.visibility,
                      max_deliveries=max_deliveries or config.max_deliveries)
        group.ensure("0")
        label = f"worker {topic}/{group_name}"
        lines = _Lines(label, quiet, redactor)
        runs = _Handler(root, tool, log, group_name)
        worker = Worker(group, runs, concurrency=concurrency, max_events=max_events, report=lines.report,
                        finished=runs.record)
        lines.say(f"{label}: handler '{tool.name}', consumer {group.consumer}, concurrency {concurrency}, "
                  f"redis {link.where}")
        head = {"topic": topic, "group": group_name, "handler": tool.name, "consumer": group.consumer}
    else:
        _register_secrets(g, None)
        g.internals.remote_caller = True  # as for an event: the project's trust rules apply
    if schedules:
        clock = ScheduledRuns(g, store_for(g), log, label)
        lines.say(f"{label}: running the project's stored schedules")

    def tallies() -> dict[str, Any]:
        return {**(worker.tally.as_dict() if worker is not None else {}),
                **({"schedules": clock.counts.as_dict()} if clock is not None else {})}

    def abandoned(name: str) -> None:
        """A second signal: the process exits at once, but --json still gets its summary line."""
        if as_json:
            late = {"ok": False, **head, **tallies(), "stoppedBy": name,
                    # taken, not acknowledged: redelivered later
                    **({"abandoned": worker.unacknowledged} if worker is not None else {})}
            os.write(1, (g.internals.redactor.redact(json.dumps(late)) + "\n").encode())

    stopped_by = asyncio.run(_supervised(worker, clock, lines, g, log, abandoned))
    summary = {"ok": True, **head, **tallies(), "stoppedBy": stopped_by or "max-events"}
    render.info(_summary_line(label, worker.tally if worker is not None else None,
                              clock.counts.as_dict() if clock is not None else None, stopped_by))
    if as_json:
        render.emit_json(summary, g.internals)
    return {"SIGTERM": 143, "SIGINT": 130}.get(stopped_by or "", 0)


async def _supervised(worker: Worker | None, clock: ScheduledRuns | None, lines: _Lines, g: Any,
                      log: Batcher | None, abandoned: Callable[[str], None]) -> str | None:
    from agentapps.core.cleanup import run_cleanups

    loop = asyncio.get_running_loop()
    stopped: list[str] = []

    def on_signal(number: int, frame: Any) -> None:
        # signal.signal, not the loop's handlers: this runs even while a handler skill blocks the loop
        name = signal.Signals(number).name
        if stopped:  # the second signal: leave now; what is in flight is redelivered later
            os.write(2, f"{lines.label}: {name} again; exiting without waiting for the events in flight.\n"
                     .encode())
            abandoned(name)
            os._exit(128 + number)
        stopped.append(name)
        if worker is not None:
            worker.stop()
        if clock is not None:
            clock.stop()
        what = "events in flight" if clock is None else "runs under way" if worker is None else \
            "events in flight and scheduled runs under way"
        loop.call_soon_threadsafe(lines.say, f"{lines.label}: {name}: finishing the {what}, then exiting.")

    previous = {number: signal.signal(number, on_signal) for number in (signal.SIGTERM, signal.SIGINT)}
    ticker = asyncio.create_task(lines.tick(worker)) if worker is not None else None
    timing = asyncio.ensure_future(clock.run()) if clock is not None else None
    try:
        if worker is not None:
            await worker.run()
            if clock is not None:  # --max-events reached: the schedules stop with the events
                clock.stop()
        if timing is not None:
            await timing
    finally:
        if ticker is not None:
            ticker.cancel()
        if clock is not None and timing is not None and not timing.done():
            clock.stop()
            await timing
        for number, handler in previous.items():
            signal.signal(number, handler)
        if log is not None:
            await log.close()  # the run-log records still pending
        if worker is not None:
            worker.group.leave()
        await run_cleanups(g.internals)
    return stopped[0] if stopped else None


class _Handler:
    """Runs the handler skill for one event as a run of its own, then adds it to the run log."""

    def __init__(self, root: Context, tool: Any, log: Batcher | None, group: str) -> None:
        self.g, self.tool, self.group = root.globals, tool, group
        self.g.internals.remote_caller = True  # an event from the queue: the project's trust rules apply
        self.runs: dict[int, ServedRun] = {}  # by id() of the event being handled
        self.log = log  # run-log records, written in batches (None: AGENTAPPS_RUN_LOG is off)

    async def __call__(self, event: dict[str, Any]) -> Any:
        # its own usage, cost, budgets and session key; in the trace of the call that emitted it
        parent = event.get("traceparent")
        run = self.runs[id(event)] = begin(self.g, traceparent=parent if isinstance(parent, str) else None)
        RUN_STARTED.set(time.time_ns())  # each event is a run: skill code written during it is not loaded
        if self.tool.kind != "code":  # an agent handler checkpoints; a redelivery resumes it
            from agentapps.agent.checkpoint import event_ticket

            event_ticket(run.g, self.tool, event, self.group)
        return await invoke_root(run.root, self.tool, {"event": event})

    def _ticket(self, run: ServedRun, error: BaseException | None, failed: dict[str, Any] | None) -> Any:
        """The event's checkpoint ticket (an agent handler's), cleared once the event is done with."""
        if self.tool.kind == "code":
            return None
        from agentapps.agent.slots import AGENT_TICKET

        ticket = run.g.internals.get(AGENT_TICKET)
        if ticket is not None and (error is None or (failed is not None and failed["outcome"] == "dead")):
            ticket.clear(run.g)
        return ticket

    async def record(self, event: dict[str, Any], error: BaseException | None,
                     failed: dict[str, Any] | None) -> None:
        """The event's run-log record (the worker's `finished` hook; never raises)."""
        run = self.runs.pop(id(event), None)
        if run is None:
            return
        ticket = self._ticket(run, error, failed)
        if self.log is None:
            return
        found = None if error is None else record_of(error, run.g.internals.redactor, skill=self.tool.name)
        code = 0 if found is None else int(found["exit_code"])
        note = None
        if failed is not None:
            after = {"dead": f"moved to {failed['dead_topic']}", "released": "to be tried again",
                     "pending": "to be tried again after the visibility timeout",
                     "gone": "another consumer holds it now"}.get(failed["outcome"], failed["outcome"])
            note = f"event {event.get('id')}, delivery {failed['deliveries']} of {failed['limit']}; {after}"
        try:
            totals = None
            if ticket is not None and ticket.earlier is not None:  # a resumed try: only what it spent
                spent: dict[str, Any] | None = run.g.internals.get(AGENT_TOTALS)
                totals = spent_between(ticket.earlier, spent or {})
            self.log.add(entry_for(skill=self.tool.name, args={"event": event}, internals=run.g.internals,
                                   exit_code=code, error=found, started=run.started, note=note, totals=totals))
        except Exception as exc:  # noqa: BLE001 - the log never stops the worker
            render.warn(f"the run was not added to the run log: {type(exc).__name__}: {exc}")


def _check_handler(g: Any, tool: Any) -> None:
    from agentapps.cascade.interface import params_of

    params = params_of(tool, g.lookup) or {}
    props = params.get("properties") or {}
    if not params or ("event" not in props and params.get("additionalProperties", True) is False):
        raise UsageError(f"Handler '{tool.name}' takes no `event` argument: declare it in its params, "
                         "e.g. {type: object, properties: {event: {type: object}}}.", skill=tool.name)


def _register_secrets(g: Any, tool: Any | None) -> None:
    from agentapps.secrets import register_declared

    try:
        tools, _ = g.lookup.list_all(provided=False)
    except AgentAppsError:
        tools = []
    for each in [*tools, tool, g.config.main_tool]:
        if each is not None:
            register_declared(g.internals, each.metadata.get("env"))


class _Lines:
    """Progress and warnings on stderr (progress lines only when not quiet)."""

    def __init__(self, label: str, quiet: bool, redactor: Any = None) -> None:
        self.label, self.quiet, self.redactor = label, quiet, redactor

    def say(self, text: str) -> None:
        if not self.quiet:
            render.info(text)

    def report(self, what: str, details: dict[str, Any]) -> None:
        if what == "failed":
            error = details["error"]
            text = record_of(error, self.redactor)["message"]  # the record the run log keeps
            after = {"dead": f"; moved to {details['dead_topic']}", "released": "; to be tried again",
                     "pending": "; to be tried again after the visibility timeout",
                     "gone": "; another consumer holds it now"}.get(details["outcome"], "")
            render.warn(f"{self.label}: event {details['id']} failed (delivery {details['deliveries']} of "
                        f"{details['limit']}{after}): {text}")
        elif details.get("retry") is None:
            render.warn(f"{self.label}: {details['error']} Unacknowledged events will be redelivered.")
        else:
            render.warn(f"{self.label}: {details['error']} Retrying in {details['retry']:g} s.")

    async def tick(self, worker: Worker) -> None:
        last = -1
        while True:
            await asyncio.sleep(PROGRESS_EVERY)
            if worker.tally.handled != last:
                last = worker.tally.handled
                self.say(f"{self.label}: {_counts(worker.tally)}, {worker.in_flight} in flight")


def _counts(tally: Tally) -> str:
    seconds = max(time.monotonic() - tally.started, 1e-9)
    return (f"{tally.handled} handled ({tally.succeeded} ok, {tally.failed} failed), "
            f"{tally.dead_lettered} dead-lettered, {tally.handled / seconds:,.0f}/s")


def _summary_line(label: str, tally: Tally | None, scheduled: dict[str, int] | None, stopped_by: str | None) -> str:
    seconds = time.monotonic() - tally.started if tally is not None else None
    why = f"stopped by {stopped_by}" if stopped_by else "reached --max-events"
    parts = [_counts(tally)] if tally is not None else []
    if scheduled is not None:
        parts.append(f"{scheduled['started']} scheduled runs ({scheduled['succeeded']} ok, {scheduled['failed']} failed)")
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return f"{label}: {', '.join(parts)}{took}; {why}."
