"""Which skills `agentapps mcp-server` offers, as MCP tool shapes, and when that set changed.

Offered: the project's visible skills (its roots and AGENTAPPS_PATH, and the user's own), never a
hidden skill, pipeline middleware, the agent and its providers, callbacks or other servers' MCP
tools. `--allowed-tools` narrows that set, and may name bundled skills to add them; a pattern that
selects none of the skills that could be offered is most likely a typo, so the servers warn about it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.cascade.interface import params_of, returns_of
from agentapps.errors import AgentAppsError
from agentapps.tools.foreign import translate
from agentapps.tools.names import close_names
from agentapps.tools.policy import Candidate, Policy, Rule, split_patterns

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
    agent: bool = False  # an agent skill (markdown): its runs take steering and follow-ups


def selected(policy: Policy, tool: ToolDef) -> bool:
    candidate = Candidate(tool.name, tool.tags, tool.hidden)
    rules = policy.rules or ()
    if any(r.deny and not r.constraints and r.selects(candidate) for r in rules):
        return False
    return any(not r.deny and r.selects(candidate) for r in rules)


def offerable(tool: ToolDef) -> bool:
    """Whether some --allowed-tools could offer it (never a hidden skill, middleware, a provider, nor
    a main skill that holds only configuration: no params and no prompt but `init`'s placeholder)."""
    if tool.hidden or tool.kind == "memory" or tool.name in NEVER or _only_configuration(tool):
        return False
    return tool.metadata.get("role") not in ("middleware", "pipeline") and "agent-provider" not in tool.tags


def _only_configuration(tool: ToolDef) -> bool:
    from agentapps.tools.names import MAIN_PLACEHOLDER

    return (tool.metadata.get("role") == "main" and tool.kind == "markdown" and not tool.metadata.get("params")
            and (tool.body or "").strip() in ("", MAIN_PLACEHOLDER))


def offered(tool: ToolDef, policy: Policy | None) -> bool:
    if not offerable(tool):
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
    return Offer(tool.name, shape, params, structured, agent=tool.kind == "markdown")


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

    def unmatched(self) -> list[tuple[str, str | None]]:
        """The --allowed-tools patterns, as written, that select none of the skills that could be offered,
        each with the skill name it most resembles when it is a plain name."""
        if self.policy is None or not self.policy.source:
            return []
        tools, _ = self.lookup.list_all(provided=False)
        candidates = [Candidate(t.name, t.tags, t.hidden) for t in tools if offerable(t)]
        names = [c.name for c in candidates]
        missed: list[tuple[str, str | None]] = []
        for written in split_patterns(self.policy.source):
            rules = [Rule.parse(p) for p in translate(written).patterns]
            if not any(rule.selects(c) for rule in rules for c in candidates):
                close = [n for r in rules if r.literal for n in close_names(r.selector, names, 1)]
                missed.append((written, close[0] if close else None))
        return missed

    def warning(self, command: str) -> str | None:
        """One line naming the patterns that select nothing (a skill added later that they select is
        still served: the servers re-read the skill files), or None when every pattern selects one."""
        missed = self.unmatched()
        if not missed:
            return None
        quoted = ", ".join(f"'{p}'" for p, _ in missed)
        verb, they = ("selects", "it") if len(missed) == 1 else ("select", "they")
        count = len(self.offers)
        served = (f"serving {count} skill{'s' if count != 1 else ''}" if count else
                  f"no skill is served until one {they} {verb} is added")
        close = ", ".join(f"'{c}' for '{p}'" for p, c in missed if c)
        hint = f" Did you mean {close}?" if close else " `agentapps list` shows the names."
        return f"warning: agentapps {command}: --allowed-tools {quoted} {verb} no skill ({served}).{hint}"
