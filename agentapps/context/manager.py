"""The onion: `invoke` admits a call and serves it; `next()` runs the rest of the served chain.

Rules (pinned by tests/context/test_onion.py): an entry that returns a value other than None sets
the served context's result and stops its chain; returning None continues with the next entry
(whether or not it called `next()`); an exception unwinds through every entry; calling `next()`
twice, or returning before the `next()` it started has finished, is a ChainError.

A static entry's function is called through `call_tool` (context/calls.py), as any skill's is;
only an awaitable it returns is awaited, so a middleware that is a plain function (a guard that
checks and returns) costs a call, not a coroutine.
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
from agentapps.context.calls import call_tool
from agentapps.context.context import Context, Globals, bind_manager
from agentapps.context.plan import chain_steps, prepare
from agentapps.core.awaiting import CORO_CLOSED, CORO_CREATED, coroutine_state
from agentapps.core.driver import loop_running
from agentapps.core.loan import Loan
from agentapps.errors import ChainError
from agentapps.telemetry.slots import TRACING
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
    tracing = g.internals.get(TRACING)  # None unless OTEL_* configure traces
    span = None if tracing is None else tracing.begin(ctx)
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
            value = g.internals.loan.run(_serve(ctx, steps))
        else:
            value = await _serve(ctx, steps)
    except BaseException as exc:
        ctx.locals.error = exc
        if span is not None:
            tracing.end(ctx, span, exc)  # type: ignore[union-attr]
        raise
    if span is not None:
        tracing.end(ctx, span, None)  # type: ignore[union-attr]
    return value


async def _serve(ctx: Context, steps: list[ChainStep] | None = None) -> Any:
    """Run a prepared context (a static tool's function, else its chain) and return its result."""
    if not ctx.chain.static:
        await _dispatch(ctx, 0, steps)
        return ctx._locals["result"] if ctx._locals is not None else ctx._result
    value = call_tool(ctx)
    if type(value) is CoroutineType:
        value = await value
    if value is not None:
        set_result(ctx, value)
    return value


# The onion, as koa's compose: entry `index` is called with a next() that dispatches `index + 1`.
# Two differences: an entry that returns a value sets the result and stops the chain, and one that
# returns None without calling next() lets the chain go on to the following entry.
async def _dispatch(owner: Context, index: int, steps: list[ChainStep] | None = None) -> None:
    g = owner.globals
    if steps is None:
        steps = chain_steps(owner.chain, g)
    while index < len(steps):
        if g.signal.reason is not None:
            g.signal.raise_if_aborted()
        tool, meta, plan, configured = steps[index]
        config = owner.meta.get(tool.name) if configured else None  # a middleware declaring params
        entry = Context(tool, dict(config) if isinstance(config, dict) else {}, owner, g, owner)
        entry.chain_index = index
        if meta is None:
            prepare(entry)  # its metadata interpolates the call
            plan = entry.chain
        else:
            entry.meta, entry.chain = meta, plan
        value = call_tool(entry) if plan.static else _serve(entry)
        if type(value) is CoroutineType:
            value = await value
        pending = None if entry._manager is None else entry._manager._next
        if pending is not None and (state := coroutine_state(pending)) != CORO_CLOSED:
            if state == CORO_CREATED:  # guard 2: it returned before the next() it started finished
                pending.close()  # never awaited: nothing ran, and no "never awaited" warning
            raise ChainError(f"Middleware '{tool.name}' returned before its next() finished; "
                             "await ctx.manager.next().", skill=tool.name)
        if value is not None:
            set_result(owner, value)
            return
        if pending is not None:  # next() ran the rest of the chain
            return
        index += 1


def set_result(ctx: Context, value: Any) -> None:
    """`ctx.locals.result`, kept on the context itself until its locals are first used."""
    if ctx._locals is None:
        ctx._result = value
    else:
        ctx._locals["result"] = value


async def invoke_root(root: Context, ref: str | ToolDef, args: dict[str, Any]) -> Any:
    return await invoke(root, ref, args)
