"""Calling an MCP tool as a skill: approval for destructive tools, the server's session, and its
result as a skill result (structured content when the tool declares an output schema, else text)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

from agentapps.errors import SkillError, SkillNotFoundError
from agentapps.mcp.connection import LostSession
from agentapps.mcp.elicit import FORWARD
from agentapps.mcp.hub import Hub
from agentapps.mcp.registry import registry_for
from agentapps.mcp.slots import MCP_HUB
from agentapps.secrets import redact
from agentapps.telemetry.ending import traceparent

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from agentapps.context.context import Context, Globals
    from agentapps.mcp.config import ServerSpec
    from agentapps.runstate import Internals, Reporter

MAX_ERROR = 2000  # characters of a server's error message kept in ours


def hub_for(g: Globals) -> Hub:
    found = g.internals.get(MCP_HUB)
    if found is None:
        found = Hub(g)
        g.internals.set(MCP_HUB, found)
    return found


def _caller(ctx: Context) -> str:
    """The skill on whose behalf the call is made (agent code acts for the skill its agent serves)."""
    parent = ctx.parent
    while parent is not None and (parent.entry or parent.tool.name in ("agent-code", "agent")):
        parent = parent.parent
    return parent.tool.name if parent is not None and parent.parent is not None else "agentapps"


async def _approve(ctx: Context, spec: ServerSpec, skill: str, args: dict[str, Any]) -> None:
    from agentapps.trust import decide

    g = ctx.globals
    approve = list(g.config.overrides.get("approve") or []) + os.environ.get("AGENTAPPS_APPROVE", "").split()
    interactive = sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")
    rule = f"mcp.{spec.name}.confirm: {spec.confirm}"
    await asyncio.to_thread(
        decide, caller=_caller(ctx), callee=skill, rule=rule, args=dict(args), data_dir=g.config.data_dir,
        approve=approve, interactive=interactive, timeout=float(os.environ.get("AGENTAPPS_TRUST_TIMEOUT", "60")))


def _block(item: Any) -> str:
    kind = getattr(item, "type", "")
    if kind == "text":
        return str(item.text)
    if kind in ("image", "audio"):
        return f"[{kind} {item.mime_type}, {len(item.data) * 3 // 4} bytes]"
    if kind == "resource":
        resource = item.resource
        return str(getattr(resource, "text", None) or f"[resource {resource.uri}]")
    if kind == "resource_link":
        return f"[link {item.uri}]"
    return f"[{kind}]"


def text_of(result: CallToolResult) -> str:
    return "\n".join(_block(item) for item in result.content)


def outcome(spec: ServerSpec, tool: str, skill: str, result: CallToolResult, structured: bool,
            internals: Internals) -> Any:
    if result.is_error:
        said = redact(" ".join(text_of(result).split())[:MAX_ERROR], internals) or "no message"
        raise SkillError(f"MCP server '{spec.name}' tool '{tool}' failed: {said}", skill=skill)
    if structured and result.structured_content is not None:
        return result.structured_content
    return text_of(result)


def _live_needs_approval(server: Any, spec: ServerSpec, tool: str) -> bool:
    """Whether the server's own tool list (listed by this process) marks `tool` as needing approval."""
    from agentapps.mcp.tools import needs_approval

    if server is None or not server.fresh or not server.tools:
        return spec.confirm != "none"  # no list from the server itself: ask unless approvals are off
    for listed in server.tools:
        if str(listed.get("name") or "") == tool:
            annotations = listed.get("annotations")
            return needs_approval(spec, annotations if isinstance(annotations, dict) else {})
    return needs_approval(spec, {})


async def call_tool(ctx: Context, prefix: str, tool: str, skill: str, args: dict[str, Any], *,
                    confirm: bool, structured: bool) -> Any:
    g = ctx.globals
    registry = registry_for(g)
    server = registry.servers.get(prefix)
    if server is None or server.spec is None:
        raise SkillNotFoundError(f"No MCP server is declared for '{skill}'.", skill=skill)
    spec = server.spec
    if confirm:
        await _approve(ctx, spec, skill, args)
    hub = hub_for(g)

    def on_tools(tools: list[dict[str, Any]]) -> None:
        registry.set_tools(prefix, tools, fresh=True)

    conn = await hub.connection(spec, on_tools)
    if not confirm and _live_needs_approval(registry.servers.get(prefix), spec, tool):
        # The skill was made from a cached tool list (a file in the checkout, which a pull request
        # can forge): whether a call needs approval is decided by what the server itself lists.
        await _approve(ctx, spec, skill, args)
    report: Reporter | None = g.internals.reporter

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        assert report is not None
        report("mcp-progress", {"server": spec.name, "tool": tool, "progress": progress, "total": total,
                                "message": message})

    # progress is asked for only when someone shows it (it costs a token and a handler per call)
    on_progress = progress if report is not None else None
    parent = traceparent(ctx)  # traces on: the server's run of the tool joins this call's trace
    try:
        result = await conn.call(tool, dict(args), FORWARD.get(), on_progress, parent)
    except LostSession:
        # The server restarted since the last call: it refused our session without running the
        # call, so sending it again is safe. Once: the hub opens a new session (counted like a
        # restart, at most once per run) and a second refusal is the error.
        conn = await hub.connection(spec, on_tools)
        if report is not None:
            report("mcp-reconnect", {"server": spec.name, "tool": tool})
        result = await conn.call(tool, dict(args), FORWARD.get(), on_progress, parent)
    return outcome(spec, tool, skill, result, structured, g.internals)
