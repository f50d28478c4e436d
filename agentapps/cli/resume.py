"""`agentapps run --resume RUN_ID` (and `agentapps runs resume RUN_ID`): find the run and its
checkpoint, refuse what cannot be resumed (each with its exit code), and give the run back its
skill, args and runner settings; and the checkpoint ticket every agent skill's run gets."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import (
    NoCheckpointError,
    RunFinishedError,
    SkillChangedError,
    StoreCorruptError,
    UnknownRunError,
    UsageError,
)

if TYPE_CHECKING:
    from agentapps.cli.run_options import RunOptions
    from agentapps.context.context import Globals
    from agentapps.types import ToolDef as Tool


def checkpoint_of(opts: RunOptions) -> dict[str, Any]:
    """Run `opts.resume`'s checkpoint; `opts` gets the run's skill and the runner settings it had
    (those given again now win)."""
    from agentapps.agent.checkpoint import load
    from agentapps.boot import bootstrap
    from agentapps.runlog import log_path
    from agentapps.runlog.query import get_run

    run_id = opts.resume
    assert run_id is not None
    if opts.ref is not None or opts.arg_tokens or opts.args_file:
        raise UsageError("--resume RUN_ID names no skill and takes no args: it runs the skill with the args "
                         "of run RUN_ID.")
    g = bootstrap().globals
    path = log_path(g.config.log_dir)
    row = get_run(path, run_id)
    if row is None:
        raise UnknownRunError(f"No run {run_id} in {path}; 'agentapps runs list' shows the ids.")
    from agentapps.stores.runlock import take

    take(g, run_id)  # RunBusyError when another process runs or resumes it now; released as `run` returns
    row = get_run(path, run_id) or row  # as the process that held it left it
    if row["exit_code"] == 0:
        raise RunFinishedError(f"Run {run_id} of '{row['skill']}' ended well (exit 0): there is nothing to "
                               "resume.")
    try:
        found = load(g, run_id)
    except StoreCorruptError as exc:  # not the session store's remedy: `sessions clear` keeps out of checkpoints
        raise NoCheckpointError(f"Run {run_id}'s checkpoint {exc.file or ''} is damaged, so it cannot be resumed; "
                                "run it again.") from None
    from agentapps.cli.checkpoint_shape import check

    check(found, run_id)  # a field a resume reads that is damaged: exit 8, not a failure mid-run
    if found.get("skill") != row["skill"]:
        raise UnknownRunError(f"The checkpoint kept for run {run_id} is of skill '{found.get('skill')}', but "
                              f"run {run_id} in {path} ran '{row['skill']}' (another project shares the "
                              "store's namespace?); run it again.")
    saved = found.get("options") or {}
    _unsealed(found, saved, opts)
    opts.ref = _ref_of(g, found)
    opts.model = opts.model or saved.get("model")
    opts.replay = opts.replay or saved.get("replay")
    opts.record = opts.record or saved.get("record")
    opts.timeout = opts.timeout or saved.get("timeout")
    opts.max_cost = opts.max_cost or saved.get("maxCost")
    opts.approve = opts.approve or [str(a) for a in saved.get("approve") or []]
    if not opts.local and saved.get("local"):
        from agentapps.cascade.local import Override

        opts.local = [Override(o["source"], o["path"], o["value"], bool(o["text"])) for o in saved["local"]]
    return found


def _ref_of(g: Globals, found: dict[str, Any]) -> str:
    """The skill to resume: by its name, unless the run was of a file that name does not find
    now (a skill run by its path, from outside the project): then that file."""
    import os

    from agentapps.errors import AgentAppsError

    name, path = str(found["skill"]), found.get("path")
    if not isinstance(path, str) or not os.path.isfile(path):
        return name  # gone: the name decides, and a moved skill is refused (check_skill)
    try:
        tool = g.lookup.find(name)
    except AgentAppsError:
        return path
    return name if str(tool.path) == path else path


def _unsealed(found: dict[str, Any], saved: dict[str, Any], opts: RunOptions) -> None:
    """Refuse to reuse --approve, --local or --record from a checkpoint this user did not write on
    this machine (a commit or another program could have put it there): they are given again."""
    from agentapps.agent.seal import holds

    given = {"approve": bool(opts.approve), "local": bool(opts.local), "record": bool(opts.record)}
    wanted = [k for k in ("approve", "local", "record") if saved.get(k) and not given[k]]
    if not wanted or holds(found):
        return
    flags = ", ".join(f"--{k}" for k in wanted)
    raise NoCheckpointError(f"Run {found.get('runId')}'s checkpoint holds {flags} settings that were not saved "
                            "by you on this machine (a commit or another program may have written it), so they "
                            f"are not reused: give {flags} again to resume it.")


def check_skill(tool: Tool, found: dict[str, Any], force: bool) -> None:
    """Refuse to resume a run whose skill file changed since it ran (unless --force)."""
    from agentapps.agent.checkpoint import digest_of

    path = str(tool.path) if tool.path else None
    if force or (path == found.get("path") and digest_of(path) == found.get("digest")):
        return
    what = "was moved" if path != found.get("path") else "changed"
    raise SkillChangedError(f"The skill file of '{tool.name}' {what} since run {found.get('runId')}; "
                            "--force resumes it anyway, with the skill as it is now.",
                            skill=tool.name, file=path)


def give_ticket(g: Globals, tool: Tool, args: dict[str, Any], opts: RunOptions, data_dir: Path,
                started: float, found: dict[str, Any] | None) -> Any:
    """The checkpoint ticket of an agent skill's run (a code skill's run never loads the agent)."""
    if tool.kind == "code" or opts.dry_run:
        return None
    from agentapps.agent.checkpoint import Ticket
    from agentapps.agent.slots import AGENT_TICKET

    options = {"model": opts.model, "replay": opts.replay, "record": opts.record, "timeout": opts.timeout,
               "maxCost": opts.max_cost, "approve": list(opts.approve),
               "local": [{"source": o.source, "path": o.path, "value": o.value, "text": o.text} for o in opts.local]}
    ticket = Ticket(tool.name, str(tool.path) if tool.path else None, args,
                    {k: v for k, v in options.items() if v}, data_dir, started=started)
    if found is not None:
        ticket.run_id, ticket.resume = int(found["runId"]), found
        ticket.earlier_ms = float(found.get("elapsedMs") or 0)
    g.internals.set(AGENT_TICKET, ticket)
    return ticket


def ticket_run(ticket: Any) -> tuple[int | None, float | None]:
    """The run-log record the run already has, and its start counting earlier tries."""
    if ticket is None:
        return None, None
    return ticket.run_id, ticket.begun()

