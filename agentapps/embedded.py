"""Running a skill from Python: `agentapps.run(...)` and `await agentapps.arun(...)`, the embedded door.

    import agentapps
    result = agentapps.run("summarize", {"path": "notes.md"}, cwd="~/proj", timeout=120)

A run here is what `agentapps run --json` is, minus the terminal: the project is found from `cwd`
and bootstrapped, the secrets that skills declare are registered for redaction from the start,
the skill runs through the full pipeline, its result must be JSON data, and what comes back is
redacted. A failure raises the AgentAppsError subclass the CLI would report, carrying the message
the CLI would print (redacted, one line) and its `exit_code`; a bug (a skill raising ValueError,
say) raises SkillError "internal error: ..." with the original as its cause. Either way the run
is appended to the run log with the same error record.

Unlike the CLI, nothing here touches signals or the terminal's input: a cancelled `arun` task
aborts the run and re-raises CancelledError (logged as interrupted); `timeout` cancels the run
at its next await (code blocking without awaiting is not interrupted: run it in a thread).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError, ArgsError, LimitError, SkillError, UsageError

if TYPE_CHECKING:
    from agentapps.cascade.local import Override
    from agentapps.context.context import Globals
    from agentapps.runstate import Internals, Reporter


def run(ref: str, args: Mapping[str, Any] | None = None, *, cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None, model: str | None = None, local: Mapping[str, Any] | None = None,
        approve: Sequence[str] = (), max_cost: float | None = None, dry_run: bool = False,
        on_event: Reporter | None = None) -> Any:
    """Run skill `ref` with `args` and return its result (see `arun` for the options). For a
    program without an event loop in this thread; inside one, `await arun(...)` instead."""
    from agentapps.core.driver import loop_running

    if loop_running():
        raise UsageError("agentapps.run() was called inside a running event loop, which it would block; "
                         "use `await agentapps.arun(...)` there.")
    import asyncio

    return asyncio.run(arun(ref, args, cwd=cwd, timeout=timeout, model=model, local=local, approve=approve,
                            max_cost=max_cost, dry_run=dry_run, on_event=on_event))


async def arun(ref: str, args: Mapping[str, Any] | None = None, *, cwd: str | os.PathLike[str] | None = None,
               timeout: float | None = None, model: str | None = None, local: Mapping[str, Any] | None = None,
               approve: Sequence[str] = (), max_cost: float | None = None, dry_run: bool = False,
               on_event: Reporter | None = None) -> Any:
    """Run skill `ref` (a name, or a path to a skill file) with `args` and return its result.

    cwd        where the project is looked for (walking up), as the CLI's working directory; default "."
    timeout    seconds; then LimitError (exit 4), as `--timeout`
    model      a model id for every agent of the run, as `--model`
    local      {"model.region": "eu-west-1", ...}: overrides of the main skill's metadata, as
               `--local` (text values) and `--local-json` (any other JSON value)
    approve    skill names whose `trust` approvals are given, as `--approve`
    max_cost   a budget in dollars for the run's model calls, as `--max-cost`
    dry_run    stop before any model call, as `--dry-run` (not logged, as with the CLI)
    on_event   called with (type, data) for each progress and agent trace event
    """
    import asyncio

    # a task of its own: what the run sets in context variables (its start time, say) stays its own
    return await asyncio.ensure_future(_run(ref, args, cwd=cwd, timeout=timeout, model=model, local=local,
                                            approve=approve, max_cost=max_cost, dry_run=dry_run,
                                            on_event=on_event))


async def _run(ref: str, args: Mapping[str, Any] | None, *, cwd: str | os.PathLike[str] | None,
               timeout: float | None, model: str | None, local: Mapping[str, Any] | None,
               approve: Sequence[str], max_cost: float | None, dry_run: bool,
               on_event: Reporter | None) -> Any:
    import asyncio

    from agentapps.runstate import Internals

    started = time.perf_counter()
    where = Path(os.path.expanduser(cwd)) if cwd is not None else Path.cwd()
    internals = Internals()  # until bootstrap gives the run's own (a failure before it still redacts)
    g: Globals | None = None
    skill: str | None = ref if isinstance(ref, str) else None
    given: Any = {} if args is None else args
    try:
        from agentapps.boot import bootstrap
        from agentapps.context.manager import invoke_root
        from agentapps.lifecycle.served import register_secrets

        if not isinstance(given, Mapping):
            raise ArgsError(f"The args of '{ref}' must be a mapping of param names to values, "
                            f"got {type(given).__name__}.", skill=skill)
        given = dict(given)
        root = bootstrap(where, local=_overrides(local))
        g = root.globals
        internals = g.internals
        if g.config.overrides.get("local"):
            from agentapps.cascade.local import register_secrets as register_local_secrets

            register_local_secrets(internals, g.config.overrides["local"])
        register_secrets(g)
        g.config.overrides.update({k: v for k, v in (("model", model), ("approve", list(approve)),
                                                     ("maxCost", max_cost)) if v})
        if on_event is not None:
            internals.reporter = on_event
        from agentapps.lifecycle.target import resolve as resolve_target

        tool = resolve_target(g, ref)
        skill = tool.name
        internals.dry_run = dry_run
        try:
            result = await _limited(invoke_root(root, tool, given), g, timeout)
        finally:
            await _finish(g)
        result = internals.redactor.redact_data(_json(result, skill))
    except asyncio.CancelledError as exc:
        if g is not None:
            g.signal.abort("Cancelled.")
        _log(exc, skill, given, started, internals, g, where, dry_run)
        raise
    except Exception as exc:  # every failure is logged, then raised as the CLI reports it
        reported = _as_reported(exc, _log(exc, skill, given, started, internals, g, where, dry_run))
        if reported is exc:
            raise
        raise reported from exc
    _log(None, skill, given, started, internals, g, where, dry_run)
    return result


def _overrides(local: Mapping[str, Any] | None) -> list[Override]:
    """`local=` as the CLI's --local (text) and --local-json (anything else) options, in order."""
    if not local:
        return []
    import json

    from agentapps.cascade.local import parse_option

    return [parse_option(f"{path}={value}", as_json=False) if isinstance(value, str)
            else parse_option(f"{path}={json.dumps(value)}", as_json=True) for path, value in local.items()]


async def _limited(coro: Any, g: Globals, timeout: float | None) -> Any:
    if timeout is None:
        return await coro
    import asyncio

    try:
        return await asyncio.wait_for(coro, timeout)
    except TimeoutError:
        message = f"The run took longer than its timeout of {timeout:g} s and was stopped."
        g.signal.abort(message)  # threads and child processes watching the signal stop too
        raise LimitError(message) from None


async def _finish(g: Globals) -> None:
    """What the CLI does when a run ends: the registered cleanups (MCP sessions...), then any
    child process group still running is killed."""
    import signal

    from agentapps.core.cleanup import run_cleanups

    await run_cleanups(g.internals)
    for pgid in list(g.internals.children):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _json(result: Any, skill: str | None) -> Any:
    from agentapps.lifecycle.results import json_result

    result, replaced = json_result(result, skill)
    if replaced:
        import warnings

        warnings.warn(f"The result of '{skill}' held {replaced} unpaired surrogate character(s); each was "
                      "replaced with U+FFFD.", UnicodeWarning, stacklevel=4)
    return result


def _log(exc: BaseException | None, skill: str | None, args: Any, started: float, internals: Internals,
         g: Globals | None, where: Path, dry_run: bool) -> dict[str, Any] | None:
    """The run's error record (None for a success), after appending the run to the run log."""
    from agentapps.lifecycle import failure

    record = None if exc is None else failure.record(exc, internals.redactor, skill=skill)
    if not dry_run and skill is not None:
        from agentapps.runlog import log_run

        code = 0 if record is None else int(record["exit_code"])
        log_run(_data_dir(g, where), skill=skill, args=args, internals=internals, exit_code=code,
                error=record, started=started)
    return record


def _data_dir(g: Globals | None, where: Path) -> Path:
    if g is not None:
        return g.config.log_dir
    from agentapps.boot import find_project  # the run failed before bootstrap: where it would log

    project, _ = find_project(where.resolve())
    return (project if project is not None else Path.home()) / ".agent-apps"


def _as_reported(exc: Exception, record: dict[str, Any] | None) -> AgentAppsError:
    """`exc` as the CLI reported it: its message the record's (redacted, one line), the skill named."""
    assert record is not None
    if not isinstance(exc, AgentAppsError):
        return SkillError(record["message"], skill=record["skill"])
    shown = str(record["message"])
    prefix = f"{exc.location()}: " if exc.location() else ""
    exc.message = shown[len(prefix):] if prefix and shown.startswith(prefix) else shown
    exc.args = (exc.message,)
    exc.skill = exc.skill or record["skill"]
    return exc
