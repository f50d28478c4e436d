"""Which skills `agentapps mcp-server` offers, as MCP tool shapes, and when that set changed.

Offered: the project's visible skills (its roots and AGENTAPPS_PATH, and the user's own), never a
hidden skill, pipeline middleware, the agent and its providers, callbacks or other servers' MCP
tools. `--allowed-tools` narrows that set, and may name bundled skills to add them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.cascade.interface import params_of, returns_of
from agentapps.errors import AgentAppsError
from agentapps.tools.policy import Candidate, Policy

if TYPE_CHECKING:
    from agentapps.tools.lookup import Lookup
    from agentapps.types import ToolDef

NEVER = ("agent", "default")


@dataclass(frozen=True)
class Offer:
    """One skill as an MCP tool: its name, input schema and params."""

    name: str
    shape: dict[str, Any]  # the MCP Tool: name, description, inputSchema, outputSchema?
    params: dict[str, Any] | None
    structured: bool  # its `returns` is an object schema: results go out as structured content


def selected(policy: Policy, tool: ToolDef) -> bool:
    candidate = Candidate(tool.name, tool.tags, tool.hidden)
    rules = policy.rules or ()
    if any(r.deny and not r.constraints and r.selects(candidate) for r in rules):
        return False
    return any(not r.deny and r.selects(candidate) for r in rules)


def offered(tool: ToolDef, policy: Policy | None) -> bool:
    if tool.hidden or tool.kind == "memory" or tool.name in NEVER:
        return False
    if tool.metadata.get("role") in ("middleware", "pipeline") or "agent-provider" in tool.tags:
        return False
    if policy is not None and policy.rules is not None:
        return selected(policy, tool)
    return tool.root_kind != "bundled"


def offer(tool: ToolDef, lookup: Lookup) -> Offer:
    params = params_of(tool, lookup)
    returns = returns_of(tool, lookup)
    schema = dict(params) if params else {"type": "object", "properties": {}, "additionalProperties": False}
    schema["type"] = "object"
    shape: dict[str, Any] = {"name": tool.name, "description": tool.description or f"The skill '{tool.name}'.",
                             "inputSchema": schema}
    structured = isinstance(returns, dict) and returns.get("type") == "object"
    if structured:
        shape["outputSchema"] = returns
    return Offer(tool.name, shape, params, structured)


@dataclass
class Exposure:
    """The offered skills as last computed; `refresh()` says whether they changed."""

    lookup: Lookup
    policy: Policy | None
    offers: dict[str, Offer] = field(default_factory=dict)
    signature: str = ""

    def refresh(self) -> bool:
        tools, _ = self.lookup.list_all(provided=False)
        offers: dict[str, Offer] = {}
        for listed in tools:
            if not offered(listed, self.policy):
                continue
            try:
                tool = self.lookup.find(listed.name)  # re-read when the file changed since it was indexed
                offers[tool.name] = offer(tool, self.lookup)
            except AgentAppsError:
                continue  # a broken skill is left out until it is fixed
        signature = hashlib.sha256(json.dumps([o.shape for o in offers.values()], sort_keys=True,
                                              default=str).encode()).hexdigest()
        changed = signature != self.signature
        self.offers, self.signature = offers, signature
        return changed
