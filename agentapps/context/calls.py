"""Calling a tool's function: sync or async, with failures turned into errors that name the skill."""

from __future__ import annotations

from collections.abc import Awaitable
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from agentapps.core.awaiting import isawaitable
from agentapps.errors import AgentAppsError, SkillError
from agentapps.tools.loader import error_line, load_function
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context


DATA = frozenset({type(None), str, int, float, bool, dict, list})  # never awaitable


def call_tool(ctx: Context) -> Any:
    """Call `ctx.tool`'s function on `ctx` with `ctx.args` (a markdown tool has none: None).

    A plain function's value comes back as it is; an awaitable (an `async def run`) comes back
    wrapped by `settle`, for the caller to await. Either way a failure names the skill."""
    tool = ctx.tool
    if tool.kind == "markdown":
        return None
    try:
        value = (tool.fn or load_function(tool))(ctx, ctx._args)
    except AgentAppsError:
        raise
    except (Exception, SystemExit) as exc:  # sys.exit() in a skill ends the skill, not the process
        raise skill_failure(tool, exc) from exc
    if type(value) is CoroutineType:
        return value if value.cr_code is SETTLE else settle(tool, value)  # `execute` hands back its skill's
    if value.__class__ not in DATA and isawaitable(value):
        return settle(tool, value)
    return value


async def settle(tool: ToolDef, pending: Awaitable[Any]) -> Any:
    """Await what `tool`'s function returned; its failure names the skill."""
    try:
        return await pending
    except AgentAppsError:
        raise
    except (Exception, SystemExit) as exc:
        raise skill_failure(tool, exc) from exc


SETTLE = settle.__code__


def skill_failure(tool: ToolDef, exc: BaseException) -> SkillError:
    """A skill's own exception as the error that names it (file and line where it was raised)."""
    if isinstance(exc, SystemExit):
        return SkillError(f"Skill '{tool.name}' called sys.exit({exc.code!r}); a skill returns a value or "
                          "raises an error, it does not end the process.",
                          skill=tool.name, file=tool.path, line=error_line(exc, tool.path))
    return SkillError(f"Skill '{tool.name}' failed: {type(exc).__name__}: {exc}",
                      skill=tool.name, file=tool.path, line=error_line(exc, tool.path))
