"""The MCP servers a process knows (declared by the main skill at bootstrap, or by a skill's own
`metadata.mcp` when it runs) and their tools, registered as in-memory skills on demand.

It is a Lookup provider: resolving `github-create-issue` lists the `github` server's tools first
(from the tool-list cache, else by starting the server), so MCP tools come before the disk like
every in-memory skill. Tool lists are cached per server configuration in `.agent-apps/cache/mcp/`
and refreshed whenever the server itself reports them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.core.atomic import write_atomic
from agentapps.errors import AgentAppsError, ConfigError
from agentapps.mcp.config import ServerSpec, parse_server
from agentapps.mcp.slots import MCP_REGISTRY
from agentapps.mcp.tools import tool_def
from agentapps.tools.mcpnames import sanitize, server_of_uri

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals
    from agentapps.tools.lookup import Lookup
    from agentapps.types import ToolDef

KEY = "mcp.registry"


@dataclass
class Server:
    """One declared MCP server: its tool prefix and spec, or why it cannot be used."""

    prefix: str
    spec: ServerSpec | None
    error: AgentAppsError | None = None  # a wrong declaration: raised when its tools are wanted
    problem: AgentAppsError | None = None  # listing failed (not retried until a name needs it)
    tools: list[dict[str, Any]] | None = None
    fresh: bool = False  # the list came from the server itself in this process
    names: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class Registry:
    def __init__(self, g: Globals) -> None:
        self.g = g
        self.servers: dict[str, Server] = {}
        self._declared: dict[int, Any] = {}  # id(metadata.mcp value) -> the value (seen; ids can recycle)

    # -- declarations ---------------------------------------------------------------------------

    def declare(self, owner: ToolDef, name: Any, entry: Any, *, strict: bool) -> None:
        """Add one server; `strict` raises a wrong one now, otherwise its error waits for a use."""
        prefix = sanitize(str(name))
        try:
            spec = parse_server(owner, name, entry, self.g.config.project)
        except AgentAppsError as exc:
            if strict:
                raise
            self.servers.setdefault(prefix, Server(prefix, None, error=exc))
            return
        known = self.servers.get(prefix)
        if known is None:
            self.servers[prefix] = Server(prefix, spec)
        elif known.spec is None or replace(known.spec, declared_by="", file=None) != replace(
                spec, declared_by="", file=None):
            by = known.spec.declared_by if known.spec else "another skill"
            clash = ConfigError(f"Skill '{owner.name}' declares MCP server '{name}' differently from '{by}'; a "
                                "server name is one set of skills for the whole run, so rename one of them.",
                                skill=owner.name, file=owner.path)
            if strict:
                raise clash
            known.error = known.error or clash

    def declare_all(self, owner: ToolDef, value: Any) -> None:
        """A main skill's `metadata.mcp`: mistakes are reported when a tool of that server is wanted."""
        if not isinstance(value, dict):
            exc = ConfigError(f"Skill '{owner.name}' metadata.mcp must map server names to "
                              "{command, args, env} or {url, headers}.", skill=owner.name, file=owner.path)
            self.servers.setdefault("", Server("", None, problem=exc))
            return
        for name, entry in value.items():
            self.declare(owner, name, entry, strict=False)

    def declare_for(self, target: Context) -> None:
        """The servers in a served skill's cascaded `metadata.mcp` that the main skill did not declare."""
        from agentapps.context.plan import cascaded

        hit = cascaded(target.tool, target.globals)
        value = hit.meta.get("mcp")
        if not isinstance(value, dict) or self._declared.get(id(value)) is value:
            if value is not None and not isinstance(value, (bool, dict)):  # `true` declares no server
                raise ConfigError(f"Skill '{target.tool.name}' metadata.mcp must map server names to "
                                  "{command, args, env} or {url, headers}.", skill=target.tool.name,
                                  file=target.tool.path)
            return
        main = target.globals.config.main_tool
        for name in value:
            owner = next((c for c in hit.contributors if isinstance(c.metadata.get("mcp"), dict)
                          and name in c.metadata["mcp"]), target.tool)
            if owner is not main:
                self.declare(owner, name, value[name], strict=True)
        self._declared[id(value)] = value

    # -- the Lookup provider --------------------------------------------------------------------

    def provide(self, lookup: Lookup, name: str | None, fresh: bool) -> None:
        if name is None:
            for server in list(self.servers.values()):
                if server.spec is not None:
                    self._ensure(server, lookup, strict=False)
            return
        wanted = server_of_uri(name)
        for server in list(self.servers.values()):
            if not server.prefix or (server.prefix != wanted if wanted else not name.startswith(server.prefix + "-")):
                continue
            strict = fresh or wanted is not None  # after a miss everywhere else, or an mcp:// ref
            if server.spec is None:
                if strict and server.error is not None:
                    raise server.error
                continue
            self._ensure(server, lookup, strict=strict)

    def problems(self) -> list[str]:
        found: list[str] = []
        for server in self.servers.values():
            found += [str(p) for p in (server.error, server.problem) if p is not None]
            found += server.skipped
        return found

    def _ensure(self, server: Server, lookup: Lookup, *, strict: bool) -> None:
        """Know the server's tools: from the cache when not `strict`, else from the server itself
        (`strict` after a name was found nowhere: a cached list may predate a new tool)."""
        assert server.spec is not None
        if server.error is not None:
            if strict:
                raise server.error
            return
        if server.problem is not None:
            if strict:
                raise server.problem
            return
        if server.fresh or (server.tools is not None and not strict):
            return
        if not strict:
            cached = self._cached(server.spec)
            if cached is not None:
                self.set_tools(server.prefix, cached, fresh=False, lookup=lookup)
                return
        from agentapps.mcp.listing import list_now

        try:
            tools = list_now(server.spec, self.g)
        except AgentAppsError as exc:
            server.problem = exc
            if strict:
                raise
            return
        self.set_tools(server.prefix, tools, fresh=True, lookup=lookup)

    # -- tool lists -----------------------------------------------------------------------------

    def _cache_path(self, spec: ServerSpec) -> Path | None:
        if self.g.config.project is None:  # no project: nowhere of ours to keep it
            return None
        return cache_file(self.g.config.data_dir, spec)

    def _cached(self, spec: ServerSpec) -> list[dict[str, Any]] | None:
        path = self._cache_path(spec)
        return None if path is None else read_cache(path)

    def set_tools(self, prefix: str, tools: list[dict[str, Any]], *, fresh: bool, lookup: Lookup | None = None) -> None:
        """Register a server's tools as skills (replacing what it offered before)."""
        server = self.servers.get(prefix)
        if server is None or server.spec is None:
            return
        lookup = lookup or self.g.lookup
        for name in server.names:
            lookup.unregister(name)
        server.names, server.skipped = [], []
        for tool in tools:
            made = tool_def(server.spec, tool)
            kept = None if made is None or made.name in lookup.memory else reserved(lookup, made.name)
            if made is None or made.name in lookup.memory or kept is not None:
                why = ("has no name usable as a skill name" if made is None else f"would be '{made.name}', taken"
                       if kept is None else f"would be '{made.name}', the name of {kept}")
                server.skipped.append(f"MCP server '{server.spec.name}' tool {str(tool.get('name'))[:80]!r} {why}; "
                                      "it is left out.")
                continue
            lookup.register(made)
            server.names.append(made.name)
        server.tools, server.problem = tools, None
        server.fresh = server.fresh or fresh
        path = self._cache_path(server.spec) if fresh else None
        if path is not None:
            try:
                write_atomic(path, json.dumps({"server": server.spec.name, "tools": tools}).encode())
            except OSError:
                pass  # a cache we cannot write is only slower next time


def reserved(lookup: Lookup, name: str) -> str | None:
    """The disk skill an MCP tool may not shadow, described, or None: a bundled skill (`file-write`,
    `validate-allowed-tools`, ...), a hidden one or a middleware. Its name stays with it, so a
    server's tool never takes over a pipeline step or what security.md promises of a skill (hidden
    unless named, confined to the project). Other project skills are shadowed (docs/mcp.md)."""
    from agentapps.types import ToolDef

    for index in lookup.indexes:
        index.ensure(force_check=False, interval=lookup.check_interval)
        if not index.names.get(name):
            continue
        if index.entry.kind == "bundled":
            return f"the bundled skill '{name}'"
        for item in index.get(name):
            if isinstance(item, ToolDef) and (item.hidden or item.metadata.get("role") == "middleware"):
                kind = "hidden skill" if item.hidden else "middleware"
                return f"the {kind} '{name}' ({item.path})"
    return None


def cache_file(data_dir: Path, spec: ServerSpec) -> Path:
    """Where a server's tool list is cached: one file per server configuration."""
    return data_dir / "cache" / "mcp" / f"{spec.prefix}-{spec.key}.json"


def read_cache(path: Path) -> list[dict[str, Any]] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    tools = data.get("tools") if isinstance(data, dict) else None
    return tools if isinstance(tools, list) and all(isinstance(t, dict) for t in tools) else None


def registry_for(g: Globals) -> Registry:
    found = g.internals.get(MCP_REGISTRY)
    if found is None:
        found = Registry(g)
        g.internals.set(MCP_REGISTRY, found)
        g.lookup.providers.append(found)
    return found


def declare_main(g: Globals) -> None:
    """Bootstrap: the project's main skill declares servers for every skill of the run."""
    main = g.config.main_tool
    if main is not None and main.metadata.get("mcp"):
        registry_for(g).declare_all(main, main.metadata["mcp"])
