"""`agentapps run`: runner options, then the skill ref, then the skill's own params."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.cli import render, run_options
from agentapps.cli.boundary import fail, report
from agentapps.cli.inputs import read_args_file, stdin_input
from agentapps.cli.skillargs import parse_skill_args
from agentapps.cli.stdin_guard import refuse_unused_stdin
from agentapps.errors import (
    AgentAppsError,
    InterruptedError_,
    StoreWriteError,
    UsageError,
)
from agentapps.tools.task import takes_task

if TYPE_CHECKING:
    from agentapps.agent.script import Recorder
    from agentapps.runstate import Internals


class _Terminated(BaseException):
    pass


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()  # only before the event loop runs; then supervise.py takes over


def run_command(tokens: list[str]) -> int:
    as_json = "--json" in tokens[: tokens.index("--") if "--" in tokens else len(tokens)]
    try:
        opts = run_options.parse(tokens)
        if opts is not None and opts.record and opts.record == opts.replay:
            raise UsageError("--record and --replay name the same file; record to another file.")
        if opts is not None and opts.force and opts.resume is None:
            raise UsageError("--force goes with --resume RUN_ID: it resumes a run whose skill file changed.")
    except AgentAppsError as exc:
        return fail(exc, as_json=as_json and exc.exit_code != 0)
    if opts is None:
        sys.stdout.write(run_options.usage())
        return 0
    from agentapps.cli.streams import redacted_output
    from agentapps.secrets import Redactor

    redactor = Redactor()
    with redacted_output(redactor, verbose=opts.verbose):
        try:
            return _run(opts, redactor)
        finally:  # the run's record and checkpoint are written: another process may resume it now
            from agentapps.stores.runlock import release_all

            release_all()


def _run(opts: run_options.RunOptions, redactor: Any) -> int:
    started = time.perf_counter()
    skill_name: str | None = opts.ref
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    extras: dict[str, Any] = {}
    from agentapps.runstate import Internals

    internals = Internals(redactor=redactor)  # until bootstrap gives the run's own
    progress: Any = None
    args: dict[str, Any] = {}
    data_dir: Path | None = None
    ticket: Any = None  # the agent's checkpoint ticket (agentapps.cli.resume)
    try:
        from agentapps.boot import bootstrap
        from agentapps.cascade.interface import params_of
        from agentapps.context.manager import invoke_root
        from agentapps.lifecycle.outcome import agent_extras
        from agentapps.lifecycle.served import register_secrets
        from agentapps.lifecycle.target import resolve as resolve_target
        from agentapps.runlog.slots import AGENT_TOTALS

        resumed = None
        if opts.resume is not None:  # the run's skill, args and settings come from its checkpoint
            from agentapps.cli.resume import checkpoint_of

            resumed = checkpoint_of(opts)
        if opts.replay:  # a missing or broken script fails before anything starts
            from agentapps.agent.script import load_script

            load_script(Path(opts.replay))
        root = bootstrap(local=opts.local)
        g = root.globals
        internals = g.internals
        internals.redactor = redactor
        if g.config.overrides.get("local"):
            from agentapps.cascade.local import register_secrets as register_local_secrets

            register_local_secrets(internals, g.config.overrides["local"])
        register_secrets(g)
        data_dir = g.config.log_dir
        g.config.overrides.update({k: v for k, v in (("model", opts.model), ("record", opts.record),
                                                     ("replay", opts.replay), ("approve", opts.approve),
                                                     ("maxCost", opts.max_cost)) if v})
        if not opts.quiet:
            from agentapps.cli.progress import Progress

            progress = g.internals.reporter = Progress(sys.stderr)
        if opts.ref is None:
            if g.config.main_tool is None:
                raise UsageError("Name a skill to run: agentapps run SKILL [--param value ...]; "
                                 "'agentapps list' shows what is available.")
            tool = g.config.main_tool
        else:
            tool = resolve_target(g, opts.ref)
        skill_name = tool.name
        if "--help" in opts.rest or "-h" in opts.rest:
            from agentapps.cli.help import skill_help

            render.out().write(skill_help(tool, params_of(tool, g.lookup)))
            return 0
        args = read_args_file(opts.args_file) if opts.args_file else {}
        params = params_of(tool, g.lookup)
        if resumed is not None:
            from agentapps.cli.resume import check_skill

            check_skill(tool, resumed, opts.force)
            args = dict(resumed.get("args") or {})
        elif takes_task(tool, params):  # a folder skill: its task is the agent's request
            _task_args(opts, tool.name, params, args)
        else:
            if opts.rest and not opts.rest[0].startswith("-"):
                from agentapps.cli.task import no_task_text

                no_task_text(opts.rest, params, tool.name)
            args.update(parse_skill_args(opts.arg_tokens + opts.rest, params, skill=tool.name))
            refuse_unused_stdin(tool, g.config.main_tool, params, args, used_stdin=opts.args_file == "-")
            stdin_input(params, args, used_stdin=opts.args_file == "-")
        g.internals.dry_run = opts.dry_run
        from agentapps.cli.resume import give_ticket

        ticket = give_ticket(g, tool, args, opts, data_dir, started, resumed)
        try:
            from agentapps.cli.supervise import json_report, plain_report, run_supervised
            from agentapps.gateway import GATEWAY, stdin_gateway

            report = json_report(skill_name, started) if opts.json else plain_report
            gateway = GATEWAY.set(stdin_gateway())  # a persistent agent waits for input here between turns
            try:
                result: Any = run_supervised(invoke_root(root, tool, args), g, opts.timeout, report,
                                             loop=tool.loop)
            finally:  # a caller that embeds run_command keeps no gateway it did not set
                GATEWAY.reset(gateway)
        finally:
            if progress is not None:
                progress.close()
            extras = agent_extras(g.internals.get(AGENT_TOTALS))
        recording = _recorder(g.internals, opts)
        if recording is not None and recording.failed is not None:  # the run ended well: print its
            recording.failed.result = (result,)  # result, then say the recording was not saved
            raise recording.failed
        result = _printable(result, skill_name)
        if opts.replay and str(Path(opts.replay).resolve()) not in _replayed(g.internals):
            render.warn(f"--replay {opts.replay}: the script was not used (no agent ran: '{skill_name}' "
                        f"{'is a code skill' if tool.kind == 'code' else 'made no model call'}).")
        if opts.record and recording is None:
            render.warn(f"--record {opts.record}: nothing was recorded (no agent ran: '{skill_name}' "
                        f"{'is a code skill' if tool.kind == 'code' else 'made no model call'}); the file "
                        "was not written.")
    except (KeyboardInterrupt, _Terminated) as exc:
        number = 15 if isinstance(exc, _Terminated) else 2
        stop = InterruptedError_("Interrupted.", signal_number=number)
        return _failed(stop, opts, skill_name, args, started, extras, internals, data_dir, ticket)
    except Exception as exc:  # noqa: BLE001 - a run's every failure is reported and logged here
        return _failed(exc, opts, skill_name, args, started, extras, internals, data_dir, ticket)
    finally:
        signal.signal(signal.SIGTERM, previous)
        from agentapps.telemetry.ending import close

        close(internals)  # the run's spans go out before the process ends (traces on only)
    if opts.json:
        from agentapps.lifecycle.outcome import outcome

        render.emit_json(outcome(skill_name, result, None, started=started, internals=internals), internals)
    elif isinstance(result, dict) and result.get("dryRun") and "system" in result:
        # a markdown dry run reads best as the text the model would get (--json keeps the object)
        render.emit_result(f"{result['system']}\n--- user message ---\n{result['userMessage']}\n", internals)
    else:
        render.emit_result(result, internals)
    if ticket is not None:  # it ended well: nothing to resume, so its checkpoint goes
        ticket.clear(g)
    return _logged(0, None, opts, skill_name, args, started, internals, data_dir, ticket)


def _task_args(opts: run_options.RunOptions, skill: str, params: dict[str, Any] | None, args: dict[str, Any]) -> None:
    """The args of a skill that takes a task (agentapps.cli.task): the task from wherever it was given."""
    from agentapps.cli.task import piped_text, settle_task, split_task
    from agentapps.tools.task import TASK

    tokens, given = split_task(opts.arg_tokens + opts.rest, skill)
    earlier: list[tuple[str, Any]] = [("--args-file", args.pop(TASK))] if TASK in args else []
    parsed = parse_skill_args(tokens, params, skill=skill)
    if TASK in parsed:
        earlier.append(("--arg", parsed.pop(TASK)))
    args.update(parsed)
    settle_task(args, earlier + given, piped_text(opts.args_file == "-"), skill)


def _logged(code: int, error: dict[str, Any] | None, opts: run_options.RunOptions, skill: str | None,
            args: dict[str, Any], started: float, internals: Internals,
            data_dir: Path | None, ticket: Any = None) -> int:
    """Append this run to the run log (agentapps.runlog; never fails the run) and pass `code` on.
    `error` is the run's error record, the one the terminal was shown. A run whose agent
    checkpointed already has its record (`ticket`): that one is completed."""
    if not opts.dry_run and skill is not None:
        from agentapps.runlog import log_run

        if data_dir is None:  # the run failed before bootstrap
            from agentapps.boot import log_dir_for

            try:
                data_dir = log_dir_for(Path.cwd())
            except AgentAppsError:  # the project itself is broken (the error just shown says how)
                return code
        from agentapps.cli.resume import ticket_run

        run_id, begun = ticket_run(ticket)
        log_run(data_dir, skill=skill, args=args, internals=internals, exit_code=code, error=error,
                started=started if begun is None else begun, run_id=run_id)
    return code


def _printable(result: Any, skill: str | None) -> Any:
    from agentapps.lifecycle.results import json_result

    result, replaced = json_result(result, skill)
    if replaced:
        render.warn(f"The result of '{skill}' held {replaced} unpaired surrogate character(s) (half of "
                    "an emoji, say); each was printed as U+FFFD.")
    return result


def _recorder(internals: Internals, opts: run_options.RunOptions) -> Recorder | None:
    """The agent's --record recorder, once an agent made one (without --record the agent package is
    not loaded for this: a code skill's run never loads it)."""
    if not opts.record:
        return None
    from agentapps.agent.slots import AGENT_RECORDER

    return internals.get(AGENT_RECORDER)


def _replayed(internals: Internals) -> dict[str, Any]:
    """The --replay scripts an agent of this run played, by resolved path."""
    from agentapps.agent.slots import AGENT_SCRIPTS

    return internals.get(AGENT_SCRIPTS)


def _failed(exc: BaseException, opts: run_options.RunOptions, skill: str | None, args: dict[str, Any],
            started: float, extras: dict[str, Any], internals: Internals, data_dir: Path | None,
            ticket: Any = None) -> int:
    """Show the run's error record (stderr, and stdout with --json), log it, return its exit code."""
    recording = _recorder(internals, opts)
    if recording is not None and recording.failed is not None and recording.failed is not exc:
        render.warn(f"--record: {recording.failed}")  # the run failed too; its own error follows
    result = _finished_result(exc, skill)
    if result is not None and not opts.json:
        render.emit_result(result, internals)  # the skill did finish: only saving its session failed
    record = report(exc, as_json=opts.json, verbose=opts.verbose, internals=internals, started=started,
                    payload={"skill": skill, "result": result, **extras}, skill=skill)
    return _logged(int(record["exit_code"]), record, opts, skill, args, started, internals, data_dir, ticket)


def _finished_result(exc: BaseException, skill: str | None) -> Any:
    if not isinstance(exc, StoreWriteError) or exc.result is None:
        return None
    try:
        return _printable(exc.result[0], skill)
    except AgentAppsError:
        return None
