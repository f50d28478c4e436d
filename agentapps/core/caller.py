"""Which skill a built-in acts for: its immediate caller, or for agent code the skill being served."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentapps.context.context import Context


def caller_skill(ctx: Context) -> Context | None:
    """The context of the skill that called `ctx`; for a call from agent code, the markdown skill
    the agent serves (its `metadata` is what the model's calls act under); None for a call made
    directly from the command line or from the process itself."""
    from agentapps.agent.scope import CODE_TOOL, served_context

    parent = ctx.parent
    if parent is None or parent.parent is None:
        return None
    if parent.tool is CODE_TOOL or parent.tool.uri == CODE_TOOL.uri:
        agent = parent.parent
        return served_context(agent)
    return parent
