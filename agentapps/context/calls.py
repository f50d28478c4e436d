"""Calling a tool's function: sync or async, with failures turned into errors that name the skill."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError, SkillError
from agentapps.tools.loader import error_line, load_function

if TYPE_CHECKING:
    from agentapps.context.context import Context


async def call_tool(ctx: Context) -> Any:
    """Run `ctx.tool`'s function on `ctx` with `ctx.args`; a markdown tool has none and returns None."""
    tool = ctx.tool
    if tool.kind == "markdown":
        return None
    fn = load_function(tool)
    try:
        value = fn(ctx, ctx.args)
        if inspect.isawaitable(value):
            value = await value
    except AgentAppsError:
        raise
    except Exception as exc:
        raise SkillError(
            f"Skill '{tool.name}' failed: {type(exc).__name__}: {exc}",
            skill=tool.name,
            file=tool.path,
            line=error_line(exc, tool.path),
        ) from exc
    return value
