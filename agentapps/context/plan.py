"""Per-tool plans, kept on each definition for its process: cascaded metadata and the resolved middleware chain."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agentapps.cascade.chain import candidate_entries, order_entries, reaches
from agentapps.cascade.interface import interface_key
from agentapps.cascade.interpolate import interpolate
from agentapps.cascade.resolve import Cascaded, cascade
from agentapps.errors import AgentAppsError, ConfigError
from agentapps.secrets import register_declared
from agentapps.types import ChainPlan, ChainStep, ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals


def cascaded(tool: ToolDef, g: Globals) -> Cascaded:
    # kept on the definition, so it goes when the definition does; tagged with the process's caches,
    # as it was resolved against that process's search path
    kept: tuple[Any, Cascaded] | None = tool.derived.get("cascade")
    if kept is not None and kept[0] is g.cache:
        hit = kept[1]
        now = time.monotonic()
        if now - hit.checked_at < g.lookup.check_interval:
            return hit
        if _still_current(hit, g):
            hit.checked_at = now
            return hit
    result = cascade(tool, g.lookup, g.config.main_tool, g.config.project)
    result.checked_at = time.monotonic()
    tool.derived["cascade"] = (g.cache, result)
    return result


def _still_current(hit: Cascaded, g: Globals) -> bool:
    for contributor in hit.contributors[1:]:
        if contributor is g.config.main_tool:
            continue
        try:
            if g.lookup.find(contributor.name) is not contributor:
                return False
        except AgentAppsError:
            return False
    return True


def _exists(name: str, g: Globals) -> bool:
    """Does `name` name a middleware skill that a metadata key activates? Only skills declaring
    `role: middleware` are activated this way: a project skill that merely shares a key's name
    (`returns`, `tags`, `env`) never slips into every chain."""
    try:
        found = g.lookup.candidates(name)
    except AgentAppsError:
        return False
    if not found:
        return False
    first = found[0]
    return isinstance(first, ToolDef) and first.metadata.get("role") == "middleware"


def _entries_of(name: str, g: Globals) -> list[str]:
    cache = g.cache_for("entries")
    if name in cache:
        return cache[name]  # type: ignore[no-any-return]
    cache[name] = []  # guards recursion while computing
    try:
        tool = g.lookup.find(name)
        meta = cascaded(tool, g).meta
        entries = candidate_entries(meta, lambda n: _exists(n, g))
        entries += [n for n in _locked(g) if n not in entries and n != name and _exists(n, g)]
    except AgentAppsError:
        entries = []
    cache[name] = entries
    return entries


def _locked(g: Globals) -> list[str]:
    """`$locked` is read from the `default` skill itself, never from the cascade a skill controls."""
    try:
        locked = g.lookup.find("default").metadata.get("$locked") or []
    except AgentAppsError:
        return []
    return [str(n) for n in locked] if isinstance(locked, list) else []


INTERFACE_KEYS = ("params", "returns")


def _applies(name: str, tool: ToolDef, g: Globals) -> bool:
    """A middleware may declare `applies-to: markdown` (or `[code, memory]`): the kinds it serves;
    and `applies-if: returns` (or `params`): it serves only skills that declare that schema."""
    try:
        middleware = g.lookup.find(name)
    except AgentAppsError:
        return True
    kinds = middleware.metadata.get("applies-to")
    if kinds is not None and tool.kind not in ([kinds] if isinstance(kinds, str) else list(kinds)):
        return False
    needs = middleware.metadata.get("applies-if")
    if needs is None:
        return True
    if needs not in INTERFACE_KEYS:
        raise ConfigError(f"Middleware '{name}' has `applies-if: {needs!r}`; it takes 'params' or 'returns' "
                          "(the middleware then serves only skills that declare that schema).",
                          skill=name, file=middleware.path)
    return interface_key(tool, g.lookup, needs, g.config.main_tool) is not None


def chain_plan(tool: ToolDef, meta: dict[str, Any], g: Globals) -> ChainPlan:
    hit: tuple[dict[str, Any], ChainPlan] | None = tool.derived.get("chain")
    if hit is not None and hit[0] is meta:  # `meta` is this process's cascade of the tool
        return hit[1]
    g.cache.pop("entries", None)
    entries = candidate_entries(meta, lambda n: _exists(n, g))
    for name in _locked(g):  # middleware no skill may switch off (e.g. validate-allowed-tools)
        if name not in entries and name != tool.name and _exists(name, g):
            entries.append(name)
    # A middleware whose own chain leads back to itself runs statically: its function is called
    # directly, without a chain of its own (this is how the standard middleware avoid recursion).
    static = tool.name in entries or any(reaches(e, tool.name, lambda n: _entries_of(n, g)) for e in entries)
    if static:
        plan = ChainPlan([], static=True)
    else:
        order = meta.get("$order") if isinstance(meta.get("$order"), dict) else {}

        def own_order(name: str) -> dict[str, Any]:
            try:
                return g.lookup.find(name).metadata
            except AgentAppsError:
                return {}

        ordered = order_entries(entries, order or {}, own_order)
        plan = ChainPlan([e for e in ordered if _applies(e, tool, g)], static=False, ordered=ordered, served=tool)
    tool.derived["chain"] = (meta, plan)
    return plan


def chain_steps(plan: ChainPlan, g: Globals) -> list[ChainStep]:
    """Each entry's definition, metadata and plan, re-resolved at the lookup's check interval
    (shadowing stays live) so that serving a call prepares no entry from scratch."""
    now = time.monotonic()
    if now - plan.resolved_at >= g.lookup.check_interval or len(plan.steps) != len(plan.entries):
        if plan.served is not None and plan.resolved_at >= 0:  # which serve it may have changed meanwhile
            plan.entries = [e for e in plan.ordered if _applies(e, plan.served, g)]
        steps = []
        for name in plan.entries:
            tool = g.lookup.find(name)
            result = cascaded(tool, g)
            if "env" in result.meta:
                register_declared(g.internals, result.meta["env"])
            steps.append((tool, None if result.dynamic else result.meta, chain_plan(tool, result.meta, g),
                          tool.params is not None))
        plan.steps, plan.resolved_at = steps, now
        plan.loop = any(step[0].loop for step in steps)
    return plan.steps


def interface(ctx: Context, key: str) -> dict[str, Any] | None:
    """The served skill's `params` or `returns` (own, else through `$inherit`), cached with its
    cascade so the pipeline resolves each once per skill, not once per middleware per call."""
    hit = ctx.cascade or cascaded(ctx.tool, ctx.globals)
    if key not in hit.interface:
        hit.interface[key] = interface_key(ctx.tool, ctx.globals.lookup, key, ctx.globals.config.main_tool)
    return hit.interface[key]


def prepare(ctx: Context) -> None:
    """Fill ctx.meta and ctx.chain for the tool it serves."""
    g = ctx.globals
    result = cascaded(ctx.tool, g)
    meta = interpolate(result.meta, ctx) if result.dynamic else result.meta
    if "env" in meta:
        register_declared(g.internals, meta["env"])
    ctx.meta = meta
    ctx.cascade = result
    plan = result.plan
    if plan is None:
        plan = result.plan = chain_plan(ctx.tool, result.meta, g)
    ctx.chain = plan
