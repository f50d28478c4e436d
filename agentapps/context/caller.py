"""Which skill a built-in acts for: its immediate caller, or for agent code the skill being served."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentapps.context.context import Context


CODE_URI = "inline://agent-code"  # the tool agent code's calls are made as (agent.scope.CODE_TOOL)


def served_context(ctx: Context) -> Context:
    """The context whose `locals.agent` gets the trace: the markdown skill agent-execute serves
    (reached as `ctx.parent.target`), else the agent's own context (a direct call)."""
    parent = ctx.parent
    if parent is not None and parent.entry:
        return parent.target
    return ctx


def caller_skill(ctx: Context) -> Context | None:
    """The context of the skill that called `ctx`; for a call from agent code, the markdown skill
    the agent serves (its `metadata` is what the model's calls act under); None for a call made
    directly from the command line or from the process itself."""
    parent = ctx.parent
    if parent is None or parent.parent is None:
        return None
    if parent.tool.uri == CODE_URI:
        return served_context(parent.parent)
    return parent
