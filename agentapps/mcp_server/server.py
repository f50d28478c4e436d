"""`agentapps mcp-server`'s MCP server: skills as tools. An unknown tool is a protocol error;
invalid arguments, and everything that goes wrong in a run, are `isError` tool results (as the
protocol's revision 2025-11-25 asks: the calling model reads them and can correct itself)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from agentapps.context.context import Globals
from agentapps.errors import AgentAppsError, ArgsError
from agentapps.mcp.exposed import Exposure
from agentapps.mcp_server import messages
from agentapps.mcp_server.call import failure, serve_call
from agentapps.schemas.validation import check_limits, validate
from agentapps.tools.names import unknown_args_hint

log = logging.getLogger("agentapps.mcp")
MAX_PEERS = 64  # connections told about tool-list changes (HTTP may have many; the oldest drop out)


@dataclass
class Served:
    """What the server's handlers share: the skills offered, and who to tell when they change."""

    g: Globals
    exposure: Exposure
    heartbeat: float
    peers: OrderedDict[int, Any] = field(default_factory=OrderedDict)
    calls: messages.Calls = field(default_factory=messages.Calls)  # running, for agentapps_message

    def remember(self, session: Any) -> None:
        key = id(messages.peer(session))
        self.peers[key] = session
        self.peers.move_to_end(key)
        while len(self.peers) > MAX_PEERS:
            self.peers.popitem(last=False)

    async def watch(self, interval: float) -> None:
        """Poll the skill files; on a change, tell every client that listed tools."""
        while True:
            await asyncio.sleep(interval)
            try:
                changed = self.exposure.refresh()
            except AgentAppsError:
                continue
            if changed:
                for key, session in list(self.peers.items()):
                    try:
                        await session.send_tool_list_changed()
                    except Exception:  # noqa: BLE001 - that client is gone
                        self.peers.pop(key, None)

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self.remember(ctx.session)
        shapes = [o.shape for o in self.exposure.offers.values()]
        if self.takes_messages:
            shapes.append(messages.SHAPE)
        return types.ListToolsResult(tools=[types.Tool.model_validate(s, by_name=False) for s in shapes])

    @property
    def takes_messages(self) -> bool:
        """`agentapps_message` is offered: some offered skill is an agent skill."""
        return any(o.agent for o in self.exposure.offers.values())

    def _offer(self, name: str) -> Any:
        """The offered tool `name`; an unknown one is a protocol error (the client asked for
        something that is not there)."""
        offer = self.exposure.offers.get(name)
        if offer is None:
            self.exposure.refresh()  # a skill added since the last poll
            offer = self.exposure.offers.get(name)
        if offer is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool '{name}'.")
        return offer

    def _invalid(self, offer: Any, name: str, args: dict[str, Any]) -> str | None:
        """Why `args` do not fit the tool's params, or None. Said as a tool result with isError (the
        protocol's revision 2025-11-25), so the calling model reads it and can correct itself."""
        try:
            check_limits(args, skill=name)
            if offer.params is not None:
                validate(args, offer.params, self.g.cache_for("schema"), skill=name, where="params")
            elif args:
                raise AgentAppsError(f"Skill '{name}' takes no arguments, but got: {', '.join(sorted(args))}.")
        except AgentAppsError as exc:
            return exc.message + (unknown_args_hint(args, offer.params) if isinstance(exc, ArgsError) else "")
        return None

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        if params.name == messages.NAME and self.takes_messages:
            return self.calls.message(ctx, args)
        offer = self._offer(params.name)
        invalid = self._invalid(offer, params.name, args)
        if invalid is not None:
            return failure({"message": self.g.internals.redactor.redact(invalid)})
        running = self.calls.start(ctx, params.name, offer.agent)
        try:
            return await serve_call(self.g, ctx, params.name, args, structured=offer.structured,
                                    policy=self.exposure.policy, heartbeat=self.heartbeat, running=running)
        finally:
            self.calls.end(running)


class _Server(Server[Any]):
    """The SDK's server, advertising `tools.listChanged` to every client. The Streamable HTTP session
    manager starts each session with the server's default options, so the default must say it; each
    HTTP session then gets the notification on its GET stream (stdio: on the one stream)."""

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions)


def build(served: Served) -> Server[Any]:
    from importlib.metadata import PackageNotFoundError, version

    with contextlib.suppress(PackageNotFoundError):
        return _Server("agentapps", version=version("agentapps"), on_list_tools=served.list_tools,
                       on_call_tool=served.call_tool)
    return _Server("agentapps", on_list_tools=served.list_tools, on_call_tool=served.call_tool)
