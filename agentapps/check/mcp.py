"""`metadata.mcp`: each declared server is well formed, and the tools of declared servers count as
skills for `allowed-tools` patterns (from their cached tool lists; nothing is started)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.check.findings import Finding
from agentapps.errors import AgentAppsError
from agentapps.mcp.config import ServerSpec, parse_server
from agentapps.mcp.registry import cache_file, read_cache, reserved
from agentapps.mcp.tools import tool_def
from agentapps.tools.mcpnames import sanitize

if TYPE_CHECKING:
    from agentapps.check.scope import Scope, Site
    from agentapps.types import ToolDef


def declarations(site: Site) -> list[Finding]:
    tool = site.tool
    value = tool.metadata.get("mcp")
    if value is None or isinstance(value, bool):  # `true` only switches the middleware on
        return []
    if not isinstance(value, dict):
        message = f"Skill '{tool.name}' metadata.mcp must map server names to {{command, args, env}} or {{url, headers}}."
        return [site.at(["metadata", "mcp"], "error", "mcp-config", message)]
    found: list[Finding] = []
    for name, entry in value.items():
        try:
            spec = parse_server(tool, name, entry, site.scope.project)
        except AgentAppsError as exc:
            found.append(site.at(["metadata", "mcp", str(name)], "error", "mcp-config", exc.message))
            continue
        found += _shadows(site, spec, str(name))
    return found


def _shadows(site: Site, spec: ServerSpec, name: str) -> list[Finding]:
    """From the cached tool list: tools that would take a bundled, hidden or middleware skill's
    name (left out when the server runs) or shadow another project skill (documented)."""
    cached = read_cache(cache_file((site.scope.project or site.scope.cwd) / ".agent-apps", spec))
    found: list[Finding] = []
    names = set(site.scope.lookup.all_names()) if cached else set()
    for listed in cached or []:
        made = tool_def(spec, listed)
        if made is None:
            continue
        kept = reserved(site.scope.lookup, made.name)
        if kept is not None:
            message = (f"MCP server '{name}' tool {str(listed.get('name'))[:80]!r} would be '{made.name}', the name "
                       f"of {kept}; it is left out.")
        elif made.name in names:
            message = f"MCP server '{name}' tool {str(listed.get('name'))[:80]!r} shadows the skill '{made.name}'."
        else:
            continue
        found.append(site.at(["metadata", "mcp", name], "warning", "mcp-shadows", message))
    return found


def _specs(tool: ToolDef, scope: Scope) -> list[ServerSpec]:
    value: Any = tool.metadata.get("mcp")
    specs: list[ServerSpec] = []
    for name, entry in (value.items() if isinstance(value, dict) else ()):
        try:
            specs.append(parse_server(tool, name, entry, scope.project))
        except AgentAppsError:
            continue  # reported by declarations()
    return specs


def known_tools(scope: Scope, tools: list[ToolDef]) -> tuple[set[str], set[str]]:
    """(skill names of cached MCP tools, prefixes of declared servers whose list is not cached)."""
    names: set[str] = set()
    unlisted: set[str] = set()
    data_dir = (scope.project or scope.cwd) / ".agent-apps"
    for tool in tools:
        for spec in _specs(tool, scope):
            cached = read_cache(cache_file(data_dir, spec))
            if cached is None:
                unlisted.add(sanitize(spec.name))
                continue
            names.update(made.name for made in (tool_def(spec, t) for t in cached) if made is not None)
    return names, unlisted
