"""The onion: `invoke` resolves a ref and runs its chain; `next` runs the rest of the target's chain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentapps.context.calls import call_tool
from agentapps.context.plan import chain_tools, prepare
from agentapps.errors import ChainError, DeniedError, LimitError, UsageError
from agentapps.tools.names import ref_kind
from agentapps.tools.policy import Policy
from agentapps.tools.schema import MAX_ARGS_BYTES, MAX_STRING, check_limits
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context


class ContextManager:
    __slots__ = ("_next_called", "ctx")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._next_called = False

    async def invoke(
        self, ref: str | ToolDef, args: dict[str, Any] | None = None, *, untrusted: bool = False,
        restrict: Sequence[Policy] = (),
    ) -> Any:
        """Call a skill through the full pipeline and return its result.

        `untrusted` (agent code) allows bare names only; `restrict` adds allowed-tools policies that
        bind everything the callee calls (they can only narrow, never widen).
        """
        return await _invoke(self.ctx, ref, args if args is not None else {}, None, untrusted, tuple(restrict))

    def narrow(self, allowed_tools: str | None, owner: str) -> None:
        """Restrict the calls this context makes from now on (a skill may only narrow itself)."""
        self.ctx.run.policies = (*self.ctx.run.policies, policy_for(self.ctx.globals, allowed_tools, owner))

    async def next(self) -> None:
        """Run the rest of the served context's chain (once per middleware call)."""
        if self._next_called:
            raise ChainError(
                f"Middleware '{self.ctx.tool.name}' called next() twice; call it at most once.",
                skill=self.ctx.tool.name,
            )
        self._next_called = True
        target = self.ctx.envelope.target
        if target is self.ctx:
            raise ChainError(
                f"Skill '{self.ctx.tool.name}' called next() but is not running as middleware.",
                skill=self.ctx.tool.name,
            )
        await _dispatch(target, self.ctx.run.chain_index + 1)


def policy_for(g: Any, text: str | None, owner: str) -> Policy:
    cache = g.cache_for("policy")
    key = (text, owner)
    found = cache.get(key)
    if found is None:
        found = cache[key] = Policy.parse(text, owner)
    return found  # type: ignore[no-any-return]


async def _invoke(
    caller: Context | None, ref: str | ToolDef, args: dict[str, Any], target: Context | None, untrusted: bool,
    restrict: tuple[Policy, ...] = (),
) -> Any:
    from agentapps.context.context import Context

    if caller is None:
        raise ChainError("invoke() needs a calling context.")
    g = caller.globals
    g.signal.raise_if_aborted()
    # agent code's own calls name bare skills only; the skills they run are not agent code
    untrusted = untrusted or caller.envelope.untrusted
    if isinstance(ref, str):
        if untrusted and ref_kind(ref) != "name":
            raise DeniedError(
                f"Agent code may only call skills by bare name; '{ref[:80]}' is a path or URI.",
                skill=caller.tool.name,
            )
        tool = g.lookup.resolve(ref)
    else:
        tool = ref
    if target is None:
        if caller.envelope.depth + 1 > g.config.max_depth:
            raise LimitError(
                f"Calling '{tool.name}' would nest deeper than {g.config.max_depth} skill calls; "
                "look for a skill that calls itself.",
                skill=tool.name,
            )
        if not isinstance(args, dict):
            from agentapps.errors import ArgsError

            raise ArgsError(f"Arguments for '{tool.name}' must be an object.", skill=tool.name)
        if not caller.run.trusted:  # middleware are trusted pipeline code (e.g. a long prompt for the agent)
            # the user's own args from the command line (a piped diff, say) may use the whole 1 MiB
            top = caller.envelope.parent is None
            check_limits(args, skill=tool.name, max_string=MAX_ARGS_BYTES if top else MAX_STRING)
    ctx = Context(tool=tool, args=args, parent=caller, globals_=g, target=target)
    if target is None:
        # only the immediate caller's grant applies (a helper acts under its own allowed-tools, as a
        # function under its own body); middleware are trusted pipeline code and grant no checks
        ctx.run.caller_policies = caller.run.policies if not caller.run.trusted else ()
        try:
            own = policy_for(g, tool.allowed_tools, tool.name)
        except UsageError as exc:  # a malformed allowed-tools pattern: point at the skill's file
            if exc.file is None and tool.path is not None:
                exc.file = str(tool.path)
            raise
        ctx.run.policies = (*restrict, own)
    try:
        prepare(ctx)
        if target is None:
            _refuse_direct_pipeline_call(ctx)
        if ctx.run.chain.static:
            value = await call_tool(ctx)
            if value is not None:
                ctx.locals.result = value
        else:
            await _dispatch(ctx, 0)
    except BaseException as exc:
        ctx.locals.error = exc
        raise
    return ctx.locals.result


def _refuse_direct_pipeline_call(ctx: Context) -> None:
    """Standard middleware serve other skills' chains; called on their own they would serve nothing."""
    role = ctx.tool.metadata.get("role")
    if role == "pipeline" or (role == "middleware" and (ctx.run.chain.static or not ctx.tool.params)):
        raise UsageError(
            f"'{ctx.tool.name}' is pipeline middleware: it runs inside other skills' chains and cannot be "
            "run by itself ('agentapps describe SKILL' shows a skill's chain).",
            skill=ctx.tool.name,
        )


async def _dispatch(owner: Context, index: int) -> None:
    """Run chain entry `index` of `owner`; entries returning None without calling next() continue."""
    tools = chain_tools(owner.run.chain, owner.globals)
    while index < len(tools) and not owner._chain_state[0]:
        owner.globals.signal.raise_if_aborted()
        entry = tools[index]
        ctx = _entry_context(owner, entry, index)
        value = await _run_entry(ctx)
        if value is not None:
            owner.locals.result = value
            owner._chain_state[0] = 1
            return
        if ctx.manager._next_called:
            return
        index += 1


def _entry_context(owner: Context, entry: ToolDef, index: int) -> Context:
    from agentapps.context.context import Context

    ctx = Context(tool=entry, args={}, parent=owner, globals_=owner.globals, target=owner)
    ctx.run.chain_index = index
    return ctx


async def _run_entry(ctx: Context) -> Any:
    prepare(ctx)
    if ctx.run.chain.static:
        return await call_tool(ctx)
    await _dispatch(ctx, 0)
    return ctx.locals.result


async def invoke_root(root: Context, ref: str | ToolDef, args: dict[str, Any]) -> Any:
    return await _invoke(root, ref, args, None, False)
