"""Admitting a call before it runs: an offered skill, args within the limits and its `params`,
its thread (the skill's session), and room in the client's concurrency allowance."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from agentapps.cascade.interface import params_of
from agentapps.context.plan import cascaded
from agentapps.errors import AgentAppsError, ArgsError, LimitError, SkillNotFoundError, UsageError
from agentapps.schemas.validation import check_limits, validate
from agentapps.serve.http import Refused
from agentapps.stores.session_settings import settings
from agentapps.tools.names import did_you_mean, unknown_args_hint
from agentapps.trust import rules_of

if TYPE_CHECKING:
    from agentapps.serve.runs import LiveRun
    from agentapps.serve.state import Server
    from agentapps.types import ToolDef


def meta_of(server: Server, tool: ToolDef) -> dict[str, Any]:
    """The skill's cascaded metadata (its own, the project's main skill's, `$inherit`, `default`):
    the pipeline's own, kept with the definition and checked as the pipeline checks it (read only)."""
    return cascaded(tool, server.g).meta


def offered(server: Server, name: Any) -> ToolDef:
    if not isinstance(name, str) or not name:
        raise Refused(400, UsageError("'skill' must name a skill (GET /skills lists them)."))
    tool = server.tool(name)
    if tool is None:
        hint = did_you_mean(name[:64], server.exposure.offers)  # among the served ones only: nothing hidden leaks
        raise Refused(404, SkillNotFoundError(f"No skill '{name[:64]}' is served here (GET /skills lists them).{hint}"))
    return tool


def checked_args(server: Server, tool: ToolDef, args: Any) -> dict[str, Any]:
    """The args, refused (400) unless an object within the limits that the skill's `params` accept."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise Refused(400, ArgsError(f"'args' must be a JSON object, not {type(args).__name__}.", skill=tool.name))
    params = params_of(tool, server.g.lookup)
    try:
        check_limits(args, skill=tool.name)
        if params is not None:
            validate(args, params, server.g.cache_for("schema"), skill=tool.name, where="params")
        elif args:
            raise ArgsError(f"Skill '{tool.name}' takes no arguments, but got: {', '.join(sorted(args))}.",
                            skill=tool.name)
    except AgentAppsError as exc:
        hint = unknown_args_hint(args, params) if isinstance(exc, ArgsError) else ""  # as `run` says --name
        raise Refused(400, ArgsError(exc.message + hint, skill=tool.name) if hint else exc) from None
    return dict(args)


def needs_approval(server: Server, tool: ToolDef, meta: dict[str, Any]) -> bool:
    """Whether the skill's own or the project's trust rules could ask for an approval."""
    main = server.g.config.main_tool
    return bool(rules_of(meta, tool.name) or (main is not None and rules_of(main.metadata, main.name)))


def session_arg(tool: ToolDef, meta: dict[str, Any]) -> tuple[str, str | None] | None:
    """(arg name, store; None for the project's default) when the skill keeps a session keyed by one
    of its args: its threads."""
    found = settings(meta.get("session"), skill=tool.name, file=tool.path)
    if found is None or not found.key.startswith("args.") or "." in found.key[5:]:
        return None
    return found.key[5:], found.store


async def thread_for(server: Server, tool: ToolDef, meta: dict[str, Any], args: dict[str, Any],
                     thread: Any, owner: str) -> str | None:
    """The thread this call continues (or starts): the session key the server fills in, so a client
    reaches only its own threads. None when the skill keeps no session."""
    keyed = session_arg(tool, meta)
    if keyed is None:
        if thread is not None:
            raise Refused(400, UsageError(f"Skill '{tool.name}' keeps no session (metadata.session: "
                                          "args.NAME), so it has no threads.", skill=tool.name))
        return None
    name, store = keyed
    given = args.get(name)
    if thread is not None and given is not None and given != thread:
        raise Refused(400, ArgsError(f"'threadId' and args.{name} differ; send only threadId.", skill=tool.name))
    by_arg = thread is None and given is not None  # the client named the session key itself
    thread = thread if thread is not None else given
    if thread is not None and (not isinstance(thread, str) or not 0 < len(thread) <= 128):
        raise Refused(400, UsageError("'threadId' must be a string of 1 to 128 characters."))
    record = await server.coord.thread(thread) if thread else None
    # Only the server names threads: an id with no thread record of this client's is refused, so a
    # client cannot take over a session the server did not start for it (a CLI or CI run's, a
    # schedule's, one from before a restart) by naming its key.
    if thread and (record is None or record.get("owner") != owner):
        # the same answer whether or not such a session exists; only the wording names what was sent
        how = ("" if not by_arg else f" args.{name} of '{tool.name}' is the server's to fill: send threadId "
               "(an id it gave you) to continue a thread, or neither to start one.")
        raise Refused(404, UsageError(f"No thread '{thread}' (GET /threads lists yours).{how}", skill=tool.name))
    thread = thread or f"t-{secrets.token_hex(8)}"
    if record is None:
        now = time.time()
        await server.coord.save_thread({"id": thread, "owner": owner, "skill": tool.name, "store": store,
                                        "created": now, "updated": now, "runs": 0, "status": "running"})
    args[name] = thread
    return str(thread)


async def admit(server: Server, who: str, run: LiveRun) -> LiveRun:
    """Start `run` in a task of its own when `who` has room (`reserve`); its end frees the slot."""
    await reserve(server, who)
    run.start()
    assert run.task is not None
    run.task.add_done_callback(lambda _: release(server, who))
    return run


async def reserve(server: Server, who: str) -> None:
    """Take one of `who`'s slots: at most `--concurrency` runs going, then up to `--queue` requests
    waiting in turn for a slot (the first to wait is the first to start), then 429. The run that
    took it gives it back with `release`."""
    limit, bound = server.options.concurrency, server.options.queue
    waiting = server.waiting.get(who)
    if server.busy[who] >= limit or waiting:
        if waiting is None:  # made only for a client that has to wait (most never do)
            waiting = server.waiting[who] = deque()
        if len(waiting) >= bound:
            raise Refused(429, LimitError(
                f"Too many runs at once for this client ({limit} going and {len(waiting)} waiting; agentapps serve "
                "--concurrency and --queue); retry when one has finished."), {"Retry-After": "1"})
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting.append(turn)
        try:
            await turn  # a finished run hands its slot over (release)
        except BaseException:
            if turn in waiting:
                waiting.remove(turn)
            elif turn.done() and not turn.cancelled():
                release(server, who)  # the slot came as this request went away: the next one takes it
            _forget_idle(server, who)
            raise
    else:
        server.busy[who] += 1


def release(server: Server, who: str) -> None:
    """A run of `who` ended: its slot goes to the first request still waiting, or is freed."""
    waiting = server.waiting.get(who)
    while waiting:
        turn = waiting.popleft()
        if not turn.done():
            turn.set_result(None)
            return
    server.busy[who] -= 1
    _forget_idle(server, who)


def _forget_idle(server: Server, who: str) -> None:
    if server.busy[who] <= 0 and not server.waiting.get(who):
        server.busy.pop(who, None)
        server.waiting.pop(who, None)
