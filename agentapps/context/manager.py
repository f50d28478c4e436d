"""The onion: `invoke` admits a call and serves it; `next()` runs the rest of the served chain.

Rules (pinned by tests/context/test_onion.py): an entry that returns a value other than None sets
the served context's result and stops its chain; returning None continues with the next entry
(whether or not it called `next()`); an exception unwinds through every entry; calling `next()`
twice, or returning before the `next()` it started has finished, is a ChainError.

An entry's function is called directly; only an awaitable it returns is awaited, so a middleware
that is a plain function (a guard that checks and returns) costs a call, not a coroutine.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from types import CoroutineType
from typing import Any

from agentapps.context.activate import activate
from agentapps.context.admission import (
    admit,
    apply_seed,
    grants,
    refuse_pipeline_call,
    split_options,
)
from agentapps.context.calls import DATA, call_tool, skill_failure
from agentapps.context.context import Context, Globals, bind_manager
from agentapps.context.plan import chain_steps, prepare
from agentapps.core.awaiting import CORO_CLOSED, CORO_CREATED, coroutine_state, isawaitable
from agentapps.core.driver import Loan, loop_running
from agentapps.errors import AgentAppsError, ChainError
from agentapps.tools.loader import load_function
from agentapps.tools.policy import Policy
from agentapps.types import ChainStep, ToolDef


class ContextManager:
    __slots__ = ("_next", "ctx")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._next: Coroutine[Any, Any, None] | None = None

    def invoke(self, ref: str | ToolDef, args: dict[str, Any] | None = None, *,
               untrusted: bool = False, restrict: Sequence[Policy] = (),
               context: dict[str, Any] | None = None) -> Coroutine[Any, Any, Any]:
        """Call a skill through the full pipeline; await the result. `untrusted` (agent code)
        allows bare names only; `restrict` adds grants the callee's own calls must also pass;
        `context` seeds the callee's `nonlocals`/`locals` (args may carry it as `$context`)."""
        return invoke(self.ctx, ref, {} if args is None else args, untrusted, tuple(restrict) if restrict else (),
                      None if context is None else {"context": context})

    def next(self) -> Coroutine[Any, Any, None]:
        """Run the rest of the served context's chain (once per middleware call; await it)."""
        ctx = self.ctx
        target = ctx.target
        if target is ctx:
            raise ChainError(f"Skill '{ctx.tool.name}' called next() but is not running as middleware.",
                             skill=ctx.tool.name)
        if self._next is not None:
            raise ChainError(f"Middleware '{ctx.tool.name}' called next() twice; call it at most once.",
                             skill=ctx.tool.name)
        self._next = _dispatch(target, ctx.chain_index + 1)
        return self._next


bind_manager(ContextManager)


def new_context(tool: ToolDef, args: dict[str, Any], parent: Context | None, globals_: Globals, *,
                target: Context | None = None, untrusted: bool = False) -> Context:
    """A context for a call made outside the onion (the CLI's root, an agent's code)."""
    ctx = Context(tool, args, parent, globals_, target, untrusted)
    ctx.meta = {}  # its own: nothing prepares it, and code may write to it
    return ctx


async def invoke(caller: Context, ref: str | ToolDef, args: dict[str, Any], untrusted: bool = False,
                 restrict: tuple[Policy, ...] = (), options: dict[str, Any] | None = None) -> Any:
    args, options = split_options(caller, args, options)
    tool = admit(caller, ref, args, untrusted)
    g = caller.globals
    ctx = Context(tool, args, caller, g)
    ctx.caller_policies, ctx.policies = grants(caller, tool, restrict)
    try:
        if options is not None:
            apply_seed(ctx, options.get("context"))
        prepare(ctx)
        refuse_pipeline_call(ctx)
        if options is not None:
            activate(ctx, options.get("frontmatter"))
        plan = ctx.chain
        steps = None if plan.static else chain_steps(plan, g)
        if (tool.loop or (steps is not None and plan.loop)) and not loop_running():
            if g.internals.loan is None:  # driven without a loop, and the call may wait: lend it one
                g.internals.loan = Loan()
            return g.internals.loan.run(_serve(ctx))
        if steps is None:
            return await _serve(ctx)
        await _dispatch(ctx, 0, steps)
        return ctx._locals["result"] if ctx._locals is not None else None
    except BaseException as exc:
        ctx.locals.error = exc
        raise


async def _serve(ctx: Context) -> Any:
    """Run a prepared context — a static tool's function directly, else its chain from the start —
    and return its result."""
    if not ctx.chain.static:
        await _dispatch(ctx, 0)
        return ctx._locals["result"] if ctx._locals is not None else None
    value = call_tool(ctx)
    if type(value) is CoroutineType:
        value = await value
    if value is not None:
        ctx.locals.result = value
    return value


async def _dispatch(owner: Context, index: int, steps: list[ChainStep] | None = None) -> None:
    """Run `owner`'s chain from entry `index` until an entry returns a value (the result: the
    chain stops), calls next() (which ran the rest), or the chain ends."""
    g = owner.globals
    if steps is None:
        steps = chain_steps(owner.chain, g)
    signal = g.signal
    while index < len(steps) and not owner.stopped:
        if signal.reason is not None:
            signal.raise_if_aborted()
        tool, meta, plan, configured = steps[index]
        if configured:  # a middleware that declares params gets its metadata key's value as its args
            config = owner.meta.get(tool.name)
            entry = Context(tool, dict(config) if isinstance(config, dict) else {}, owner, g, owner)
        else:
            entry = Context(tool, {}, owner, g, owner)
        entry.chain_index = index
        if meta is not None:
            entry.meta = meta
            entry.chain = plan
        else:  # its metadata interpolates the call
            prepare(entry)
        if plan.static:  # call_tool, inlined: every entry of every call comes through here
            if tool.kind == "markdown":
                value = None
            else:
                try:
                    value = (tool.fn or load_function(tool))(entry, entry._args)
                    if value is not None and value.__class__ not in DATA and (
                            value.__class__ is CoroutineType or isawaitable(value)):
                        value = await value  # what the entries after it raise is named already
                except AgentAppsError:
                    raise
                except (Exception, SystemExit) as exc:
                    raise skill_failure(tool, exc) from exc
        else:
            value = await _serve(entry)
        manager = entry._manager
        pending = None if manager is None else manager._next
        if pending is not None:
            state = coroutine_state(pending)
            if state != CORO_CLOSED:
                if state == CORO_CREATED:
                    pending.close()  # never awaited: nothing ran, and no "never awaited" warning
                raise ChainError(f"Middleware '{tool.name}' returned before its next() finished; "
                                 "await ctx.manager.next().", skill=tool.name)
        if value is not None:
            owner.locals["result"] = value
            owner.stopped = True
            return
        if pending is not None:
            return
        index += 1


async def invoke_root(root: Context, ref: str | ToolDef, args: dict[str, Any]) -> Any:
    return await invoke(root, ref, args)
