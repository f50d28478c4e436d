"""The onion: `invoke` admits a call and serves it; `next()` runs the rest of the served chain.

Rules (pinned by tests/context/test_onion.py): an entry that returns a value other than None sets
the served context's result and stops its chain; returning None continues with the next entry
(whether or not it called `next()`); an exception unwinds through every entry; calling `next()`
twice, or returning before the `next()` it started has finished, is a ChainError.
"""

from __future__ import annotations

import inspect
from collections.abc import Coroutine, Sequence
from inspect import isawaitable
from types import CoroutineType
from typing import Any

from agentapps.cascade.activate import activate
from agentapps.context.admission import (
    admit,
    apply_seed,
    grants,
    refuse_pipeline_call,
    split_options,
)
from agentapps.context.calls import skill_failure
from agentapps.context.context import Context, Globals
from agentapps.context.plan import chain_steps, needs_loop, prepare
from agentapps.core.driver import Loan, loop_running
from agentapps.errors import AgentAppsError, ChainError
from agentapps.tools.loader import load_function
from agentapps.tools.policy import Policy
from agentapps.types import ToolDef


class ContextManager:
    __slots__ = ("_next", "ctx")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._next: Coroutine[Any, Any, None] | None = None

    async def invoke(self, ref: str | ToolDef, args: dict[str, Any] | None = None, *,
                     untrusted: bool = False, restrict: Sequence[Policy] = (),
                     context: dict[str, Any] | None = None) -> Any:
        """Call a skill through the full pipeline and return its result. `untrusted` (agent code)
        allows bare names only; `restrict` adds grants the callee's own calls must also pass;
        `context` seeds the callee's `nonlocals`/`locals` (args may carry it as `$context`)."""
        return await invoke(self.ctx, ref, {} if args is None else args, untrusted, tuple(restrict),
                            {} if context is None else {"context": context})

    def next(self) -> Coroutine[Any, Any, None]:
        """Run the rest of the served context's chain (once per middleware call; await it)."""
        ctx = self.ctx
        if ctx.envelope.target is ctx:
            raise ChainError(f"Skill '{ctx.tool.name}' called next() but is not running as middleware.",
                             skill=ctx.tool.name)
        if self._next is not None:
            raise ChainError(f"Middleware '{ctx.tool.name}' called next() twice; call it at most once.",
                             skill=ctx.tool.name)
        self._next = _dispatch(ctx.envelope.target, ctx.run.chain_index + 1)
        return self._next


def new_context(tool: ToolDef, args: dict[str, Any], parent: Context | None, globals_: Globals, *,
                target: Context | None = None, untrusted: bool = False) -> Context:
    """A context with its manager (every context is made here)."""
    ctx = Context(tool=tool, args=args, parent=parent, globals_=globals_, target=target, untrusted=untrusted)
    ctx.manager = ContextManager(ctx)
    return ctx


async def invoke(caller: Context, ref: str | ToolDef, args: dict[str, Any], untrusted: bool = False,
                 restrict: tuple[Policy, ...] = (), options: dict[str, Any] | None = None) -> Any:
    args, options = split_options(caller, args, options or {})
    tool = admit(caller, ref, args, untrusted)
    ctx = new_context(tool, args, caller, caller.globals)
    ctx.run.caller_policies, ctx.run.policies = grants(caller, tool, restrict)
    apply_seed(ctx, options.get("context"))
    try:
        prepare(ctx)
        refuse_pipeline_call(ctx)
        activate(ctx, options.get("frontmatter"))
        if not loop_running() and needs_loop(ctx):  # driven without a loop: lend one to this call
            g = ctx.globals
            if g.internals.loan is None:
                g.internals.loan = Loan()
            return g.internals.loan.run(_serve(ctx))
        return await _serve(ctx)
    except BaseException as exc:
        ctx.locals.error = exc
        raise


async def _serve(ctx: Context) -> Any:
    """Run a prepared context — a static tool's function directly, else its chain from the start —
    and return its result."""
    if ctx.run.chain.static:  # call_tool, inlined: every middleware of every call comes through here
        tool = ctx.run.tool
        if tool.kind == "markdown":
            return None
        fn = tool.fn or load_function(tool)
        try:
            value = fn(ctx, ctx.args)
            if type(value) is CoroutineType or (value is not None and isawaitable(value)):
                value = await value
        except AgentAppsError:
            raise
        except (Exception, SystemExit) as exc:  # sys.exit() in a skill ends the skill, not the process
            raise skill_failure(tool, exc) from exc
        if value is not None:
            ctx.locals.result = value
        return value
    await _dispatch(ctx, 0)
    return ctx.locals.result if ctx._locals is not None else None


async def _dispatch(owner: Context, index: int) -> None:
    """Run entry `index` of `owner`'s chain and, unless it stopped the chain or called next()
    itself, the entries after it."""
    g = owner.globals
    steps = chain_steps(owner.run.chain, g)
    if index >= len(steps) or owner.run.stopped:
        return
    g.signal.raise_if_aborted()
    tool, meta, plan = steps[index]
    # a middleware that declares params gets its metadata key's value as its args (`label: {text: x}`)
    config = owner.run.meta.get(tool.name) if tool.params is not None else None
    entry = new_context(tool, dict(config) if isinstance(config, dict) else {}, owner, g, target=owner)
    entry.run.chain_index = index
    if meta is None:  # its metadata interpolates the call
        prepare(entry)
    else:
        entry.run.meta, entry.run.chain = meta, plan
    value = await _serve(entry)
    pending = entry.manager._next
    if pending is not None and inspect.getcoroutinestate(pending) != inspect.CORO_CLOSED:
        if inspect.getcoroutinestate(pending) == inspect.CORO_CREATED:
            pending.close()  # never awaited: nothing ran, and no "never awaited" warning
        raise ChainError(f"Middleware '{entry.tool.name}' returned before its next() finished; "
                         "await ctx.manager.next().", skill=entry.tool.name)
    if value is not None:
        owner.locals.result = value
        owner.run.stopped = True
    elif pending is None:
        await _dispatch(owner, index + 1)


async def invoke_root(root: Context, ref: str | ToolDef, args: dict[str, Any]) -> Any:
    return await invoke(root, ref, args)
