"""An MCP tool as a skill: an in-memory ToolDef whose params and returns are the tool's schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.mcp.slots import MCP_HUB
from agentapps.tools.mcpnames import skill_name, uri
from agentapps.types import ToolDef, ToolFn

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.mcp.config import ServerSpec


def needs_approval(spec: ServerSpec, annotations: dict[str, Any]) -> bool:
    """`confirm: destructive` (the default) asks for tools annotated destructive and not read-only."""
    if spec.confirm == "all":
        return True
    destructive = annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True
    return spec.confirm == "destructive" and destructive


def _bridge(prefix: str, tool: str, skill: str, confirm: bool, structured: bool) -> ToolFn:
    async def call(ctx: Context, args: dict[str, Any]) -> Any:
        if ctx.globals.internals.get(MCP_HUB) is None and not confirm:  # the first call of this process:
            from agentapps.mcp.spawn import start_early  # its server boots while the SDK loads

            await start_early(ctx.globals, prefix)
        from agentapps.mcp.client import call_tool  # the SDK loads here, on the first call

        return await call_tool(ctx, prefix, tool, skill, args, confirm=confirm, structured=structured)

    return call


def tool_def(spec: ServerSpec, tool: dict[str, Any]) -> ToolDef | None:
    """None when the tool's name cannot become a skill name (empty or too long once sanitised)."""
    raw = str(tool.get("name") or "")
    name = skill_name(spec.prefix, raw)
    if name is None:
        return None
    annotations: dict[str, Any] = tool["annotations"] if isinstance(tool.get("annotations"), dict) else {}
    params = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {"type": "object"}
    returns = tool.get("outputSchema") if isinstance(tool.get("outputSchema"), dict) else None
    description = str(tool.get("description") or tool.get("title") or f"Tool '{raw}' of MCP server '{spec.name}'.")
    meta: dict[str, Any] = {"params": params, "tags": ["mcp"]}
    if returns is not None:
        meta["returns"] = returns
    else:
        meta["validate-returns"] = False  # nothing to validate: one middleware fewer per call
    if annotations:
        meta["annotations"] = annotations
    frontmatter = {"name": name, "description": description, "metadata": meta}
    fn = _bridge(spec.prefix, raw, name, needs_approval(spec, annotations), returns is not None)
    return ToolDef(name, "memory", frontmatter, fn=fn, uri=uri(spec.prefix, raw))
