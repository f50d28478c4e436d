"""Calling a tool's function: sync or async, with failures turned into errors that name the skill."""

from __future__ import annotations

import inspect
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError, SkillError
from agentapps.tools.loader import error_line, load_function
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context


async def call_tool(ctx: Context) -> Any:
    """Run `ctx.tool`'s function on `ctx` with `ctx.args`; a markdown tool has none and returns None."""
    tool = ctx.tool
    if tool.kind == "markdown":
        return None
    fn = tool.fn or load_function(tool)
    try:
        value = fn(ctx, ctx.args)
        if type(value) is CoroutineType or (value is not None and inspect.isawaitable(value)):
            value = await value
    except AgentAppsError:
        raise
    except (Exception, SystemExit) as exc:  # sys.exit() in a skill ends the skill, not the process
        raise skill_failure(tool, exc) from exc
    return value


def skill_failure(tool: ToolDef, exc: BaseException) -> SkillError:
    """A skill's own exception as the error that names it (file and line where it was raised)."""
    if isinstance(exc, SystemExit):
        return SkillError(f"Skill '{tool.name}' called sys.exit({exc.code!r}); a skill returns a value or "
                          "raises an error, it does not end the process.",
                          skill=tool.name, file=tool.path, line=error_line(exc, tool.path))
    return SkillError(f"Skill '{tool.name}' failed: {type(exc).__name__}: {exc}",
                      skill=tool.name, file=tool.path, line=error_line(exc, tool.path))
