"""One agent run end to end: config, discovery, prompt, sandbox, callback refs, provider, result.

The provider gets only serialisable args — `prompt, config, invokeRef, hookRef, userMessage,
skillName` — and reaches code execution and hooks through `ctx.manager.invoke(ref, ...)`.
State for the run lives on the served context as `locals.agent` (`trace`, `usage`, `turns`,
`steps`, `stopReason`, `provider`, `model`); the scope agent code and sub-agents see is
`nonlocals.agent` (`events`, `contextId`, `ancestorContextId`, `config`, `depth`).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentapps.agent.checkpoint import Ticket, ticket_for
from agentapps.agent.code import BridgeError, run_code
from agentapps.agent.config import Limits, confine, effective_config, provider_of
from agentapps.agent.context_edit import ask_context_full
from agentapps.agent.discovery import discover
from agentapps.agent.period_budget import period_budget, project_priced
from agentapps.agent.persistent import await_input, interruptible
from agentapps.agent.prompt import render_system_prompt, user_message
from agentapps.agent.resume import attach, detach, memory_seed
from agentapps.agent.scope import (
    code_context,
    code_policies,
    is_within,
    make_infrastructure,
    scope_of,
    started_by_agent_code,
)
from agentapps.agent.script import recorder_for
from agentapps.agent.spend import Spend, process_spend
from agentapps.agent.state import AgentRun
from agentapps.agent.steering import INBOX, directive_for
from agentapps.agent.trace import Trace
from agentapps.agent.validate import lookup_names, model_problems
from agentapps.context.caller import served_context
from agentapps.context.context import Namespace
from agentapps.errors import ConfigError, DeniedError, LimitError, ReturnsError
from agentapps.files.skillfolder import folder_files, skill_folder
from agentapps.gateway import GATEWAY
from agentapps.runlog.slots import AGENT_TOTALS
from agentapps.telemetry.slots import TRACING
from agentapps.tools.policy import Policy
from agentapps.tools.task import request_of, takes_task

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.sandbox import Sandbox


@dataclass
class Plan:
    """Everything decided before the model is called (and all that --dry-run shows)."""

    skill: str
    config: dict[str, Any]
    limits: Limits
    policies: tuple[Policy, ...]
    prompt: str
    message: str


def plan(ctx: Context, args: dict[str, Any]) -> Plan:
    """Config (with CLI overrides, confined for sub-agents), code policies, prompt, user message."""
    skill = str(args.get("skillName") or args.get("name") or "agent")
    parent = scope_of(ctx)
    config = effective_config(args.get("config"), ctx.globals.config.overrides)
    if not parent and ctx.globals.config.overrides.get("persistent"):  # `agentapps repl`
        config["persistent"] = True
    if started_by_agent_code(ctx) and parent:  # the model chose these args: stay within its limits
        parent_config = parent.get("config") or {}
        config = confine(config, parent_config, Limits.from_config(parent_config, skill))
    judged = config
    if not parent and ctx.globals.config.overrides.get("replay"):
        # --replay stands in for the provider the files name: judge the settings a live run would
        # use (model.temperature, maxAttempts, fallback, ...), so a replayed CI run fails like it
        judged = {**config, "agent": provider_of(args.get("config") or {})}
    problems = model_problems(judged, skill, returns=args.get("returns"), names=lookup_names(ctx.globals.lookup))
    if problems:  # before any model call: the same checks `agentapps check` makes
        raise problems[0]
    limits = Limits.from_config(config, skill)
    allowed = args.get("allowedTools")
    served = served_context(ctx)
    folder = skill_folder(served.tool)
    if folder is not None and allowed is not None:  # a folder skill's agent reads its own folder
        allowed = f"{allowed} skill-file"
    policies = code_policies(ctx, allowed, skill)
    found = discover(ctx.globals.lookup, policies, allowed, config["agent"])
    files = None
    if folder is not None:
        files = {"folder": str(folder), "list": folder_files(folder),
                 "shell": any(t["name"] == "shell" for t in found.tools)}
        found.tools = [t for t in found.tools if t["name"] != "skill-file"]  # shown with the files
    asks = takes_task(served.tool, served.tool.metadata.get("params"))  # a folder skill: its task is the request
    request = request_of(served.tool, args.get("args")) if asks else None
    prompt = render_system_prompt(
        task=str(args.get("prompt") or ""),
        skill=skill, discovered=found, returns=args.get("returns"), persistent=limits.persistent,
        max_steps=limits.max_steps, has_args=isinstance(args.get("args"), dict) and not asks, files=files,
        wraps=wrapped_skill(served))
    seeded = served.locals.get("userMessage")  # an invoke's context seed (the REPL's first line)
    message = user_message(args.get("args"), args.get("userMessage") or (
        seeded if isinstance(seeded, str) else None) or request)
    return Plan(skill, config, limits, policies, prompt, message)


async def run_agent(ctx: Context, args: dict[str, Any]) -> Any:
    """Run the agent for `args` (the `agent` skill's args) and return its result; a refused
    `model` setting of the served skill names the file and line that set it."""
    try:
        return await _run_agent(ctx, args)
    except ConfigError as exc:
        served = served_context(ctx)
        if served is not ctx and exc.setting[:1] == ("model",):
            from agentapps.context.origin import place

            place(exc, served, {"model": args.get("config") or {}})
            exc.skill = exc.skill or served.tool.name  # a provider's refusal names no skill itself
        raise


async def _run_agent(ctx: Context, args: dict[str, Any]) -> Any:
    if args.get("dryRun"):
        p = plan(ctx, args)
        return {"dryRun": True, "skill": p.skill, "provider": p.config.get("agent"), "model": p.config.get("id"),
                "system": p.prompt, "userMessage": p.message}
    from agentapps.sandbox import Sandbox

    # `agentapps run`'s own agent checkpoints each turn, and a resumed one starts where it stopped
    ticket = None if scope_of(ctx) else ticket_for(ctx.globals, served_context(ctx))
    memory = memory_seed(ticket, dict(args.get("memory") or {}))
    if isinstance(args.get("args"), dict):  # the served skill's args, so code need not copy them
        memory.setdefault("args", args["args"])
    wraps = wrapped_skill(served_context(ctx))
    if wraps is not None:  # middleware mode: the call it wraps, for agent code to look at
        memory.setdefault("target", {"skill": wraps, "args": dict(served_context(ctx).target.args)})
    with Sandbox(memory=memory, middleware=wraps is not None) as sandbox:  # starts while plan() runs
        return await _run_planned(ctx, args, plan(ctx, args), sandbox, ticket)


async def _run_planned(ctx: Context, args: dict[str, Any], p: Plan, sandbox: Sandbox,
                       ticket: Ticket | None = None) -> Any:
    g = ctx.globals
    skill, config, limits = p.skill, p.config, p.limits
    parent, served = scope_of(ctx), served_context(ctx)
    depth = int(parent.get("depth", -1)) + 1
    name = str(args.get("name") or skill)
    topic = args.get("events") or parent.get("events")
    info = served.locals["agent"] = Namespace(
        trace=[], usage={"inputTokens": 0, "outputTokens": 0}, turns=0, steps=0, stopReason=None,
        provider=config["agent"], model=config["id"], name=name)
    trace = Trace(g, info.trace, name=name, topic=topic if isinstance(topic, str) else None,
                  root_context_id=ctx.nonlocals.get("rootContextId"), depth=depth)
    enclosing = parent.get("spend")
    spend = Spend(skill, enclosing if isinstance(enclosing, Spend) else process_spend(g), limits.max_tokens,
                  limits.max_cost, limits.max_turns, limits.max_steps)
    main = g.config.main_tool
    main_model = main.metadata.get("model") if main is not None else None
    periods = period_budget(config, main_model, skill, g.config.log_dir)
    if periods is not None:  # counted at the project's prices, not at a skill's own
        config = project_priced(config, main_model)
    run = AgentRun(skill, limits, args.get("returns"), trace, g.cache_for("schema"),
                   recorder_for(g, g.config.overrides.get("record")), spend, config, config["id"], periods)
    ctx.nonlocals["agent"] = {"events": topic, "contextId": served.id, "depth": depth,
                              "ancestorContextId": parent.get("contextId"), "config": config,
                              "spend": spend}
    code_ctx = code_context(ctx, p.policies)
    if g.internals.get(TRACING) is not None:
        from agentapps.telemetry.genai import AgentSpans

        trace.spans = AgentSpans(ctx, code_ctx, str(config["agent"]), name)
    make_infrastructure(ctx)
    from agentapps.callbacks.refs import create_callback_ref, release_callback_ref

    def refuse_from_code(cb_ctx: Context) -> None:
        if is_within(cb_ctx, code_ctx):
            raise DeniedError("Agent code may not call its own agent's callback refs.", skill=skill)

    async def run_next() -> Any:
        """`target.manager.next()`: the rest of the served pipeline, once; its result."""
        if run.next_called:
            raise BridgeError("target.manager.next() was already called: it runs the rest of the "
                              "pipeline once.")
        run.next_called = True
        await served.manager.next()
        return served.target.locals.result

    gateway = GATEWAY.get() if limits.persistent and depth == 0 else None
    inbox = INBOX.get() if depth == 0 else None  # steering and follow-ups (agent/steering.py)

    async def on_invoke(cb_ctx: Context, cb_args: dict[str, Any]) -> Any:
        refuse_from_code(cb_ctx)
        snippet = run_code(run, sandbox, code_ctx, cb_args,
                           run_next if served.target is not served else None)
        if inbox is not None:
            snippet = inbox.run_snippet(snippet, limits.max_result_chars)
        if gateway is None:
            return await snippet
        return await interruptible(gateway, snippet, limits.max_result_chars)

    async def on_hook(cb_ctx: Context, event: dict[str, Any]) -> Any:
        refuse_from_code(cb_ctx)
        directive = run.handle(event)
        if directive is None and event.get("type") == "tool-call" and config.get("guard"):
            directive = await _guard(ctx, str(config["guard"]), skill, event)
        if directive is None and event.get("type") == "context-full" and config.get("contextFull"):
            directive = await ask_context_full(ctx, str(config["contextFull"]), run, event)
        if gateway is not None and gateway.interrupted and event.get("type") == "tool-call":
            directive = {"deny": "The user interrupted this turn; this call did not run."}
        if inbox is not None and not (gateway is not None and gateway.interrupted):
            directive = directive_for(inbox, run, event, directive)
        if event.get("type") == "tool-call" and isinstance(directive, dict) and directive.get("deny"):
            run.denied({k: v for k, v in event.items() if k != "type"}, str(directive["deny"]))
        if event.get("type") == "turn-end" and isinstance(directive, dict):
            interrupted = gateway is not None and gateway.take_interrupt()
            if not directive.get("stop") and (directive.pop("input", False) or interrupted):
                if gateway is not None:
                    gateway.agent_counts = {"turns": run.turn, "steps": run.steps}
                directive = await await_input(ctx, run, directive, interrupted)
        return directive

    refs: list[str] = []
    trace.announce("agent-start", {"skill": skill, "model": config["id"], "provider": config["agent"]})
    sandbox.set_timeout(limits.snippet_timeout)
    if inbox is not None:  # read from here on: until its end, a message sent can be taken
        inbox.open()
    try:
        refs.append(create_callback_ref(g, on_invoke, label="agent-invoke"))
        refs.append(create_callback_ref(g, on_hook, label="agent-hook"))
        if ticket is not None:  # seeded from its checkpoint (a resume); saves one after each turn
            attach(g, ticket, run, sandbox, refs[1])
        deadline = None if math.isinf(limits.deadline) else limits.deadline
        try:
            async with asyncio.timeout(deadline) as scope:
                value = await ctx.manager.invoke(config["agent"], {
                    "prompt": p.prompt, "config": config, "invokeRef": refs[0], "hookRef": refs[1],
                    "userMessage": p.message, "skillName": skill})
        except TimeoutError:
            if not scope.expired():
                raise
            run.stop_reason = "deadline"
            raise LimitError(f"The agent for '{skill}' ran longer than {limits.deadline:g} s "
                             "(model.deadline); raise it or narrow the task.", skill=skill) from None
        return _final(run, value)
    except (asyncio.CancelledError, KeyboardInterrupt):
        run.stop_reason = "interrupted"
        raise
    except BaseException as exc:
        run.stop_reason = run.stop_reason or ("interrupted" if getattr(exc, "exit_code", 0) >= 128
                                              else "error")
        raise
    finally:
        if inbox is not None:
            inbox.close()
        for ref in refs:
            release_callback_ref(g, ref)
        if ticket is not None and len(refs) > 1:
            detach(g, refs[1])
        _settle(g, info, run, depth)
        # the run's totals close its trace, and go out as agent-complete (one shape for every listener)
        totals: dict[str, Any] = {"stopReason": run.stop_reason, "usage": spend.usage, "cost": spend.cost, "turns": run.turn,
                  "steps": run.steps, "model": run.model}
        trace.record("complete", announce=False, **totals)
        trace.announce("agent-complete", totals)
        if run.recorder is not None:
            # merged: what its maker put there stays (`agentapps test --record`: the prompt hash)
            run.recorder.info = {**run.recorder.info, "skill": skill, "model": config["id"],
                                 "provider": config["agent"]}
            run.recorder.write()


def wrapped_skill(served: Context) -> str | None:
    """In middleware mode (the served skill is a chain entry of another call), the skill it wraps."""
    return None if served.target is served else served.target.tool.name


def _final(run: AgentRun, value: Any) -> Any:
    if run.finished:
        run.stop_reason = "finished"
        return run.result
    if run.next_called:  # middleware that ran the rest of the pipeline: the wrapped result stands
        run.stop_reason = run.stop_reason or "answered"
        return None
    if run.returns is not None:
        run.stop_reason = "returns"
        raise ReturnsError(f"The agent for '{run.skill}' ended without calling "
                           "ctx.manager.finish(value) with a value matching `returns`.", skill=run.skill)
    run.stop_reason = run.stop_reason or "answered"
    return value


def _settle(g: Any, info: Namespace, run: AgentRun, depth: int) -> None:
    """Copy the run's counters to `locals.agent` and add them to the process totals (--json)."""
    info.update(usage=dict(run.usage), turns=run.turn, steps=run.steps, stopReason=run.stop_reason,
                cost=run.spend.cost if run.spend else None, model=run.model)
    totals = g.internals.get(AGENT_TOTALS)
    if totals is None:
        totals = {"turns": 0, "steps": 0, "stop_reason": None}
        g.internals.set(AGENT_TOTALS, totals)
    totals.update(process_spend(g).totals())
    totals["turns"] += run.turn
    totals["steps"] += run.steps
    if depth == 0:
        totals["stop_reason"] = run.stop_reason


async def _guard(ctx: Context, guard: str, skill: str, event: dict[str, Any]) -> dict[str, Any] | None:
    """Ask the configured guard skill about a tool call; `{"deny": reason}` blocks it."""
    args = event.get("args")
    code = args.get("code") if isinstance(args, dict) else None
    verdict = await ctx.manager.invoke(guard, {"tool": event.get("tool"), "code": code,
                                               "skillName": skill})
    if isinstance(verdict, dict) and verdict.get("deny"):
        return {"deny": str(verdict["deny"])}
    return None
