"""Which skills the model is told about, in constrained or discovery mode, as template-ready data.

Constrained mode (explicit allowed-tools, no bare `*`): every admitted skill with its params.
Discovery mode (no allowed-tools, or a bare `*`): only explicitly named skills, plus
`skill-list` and `skill-describe` so the model can look the rest up. Either way a skill shows
only if every policy binding agent code could admit some call of it (hidden skills only when
named, the served skill itself only when named), and `agent`, providers and callback refs never
show. Middleware with params are listed separately: they configure pipelines, agent code does
not call them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentapps.cascade.interface import params_of, returns_of
from agentapps.tools.foreign import translated
from agentapps.tools.lookup import Lookup
from agentapps.tools.policy import Candidate, Policy
from agentapps.types import ToolDef

DISCOVERY_TOOLS = ("skill-list", "skill-describe")
NEVER_SHOWN = ("agent", "default")
PROVIDER_TAG = "agent-provider"


@dataclass
class Discovered:
    """What the agent's discovery offers the model: the mode, and the tools and middleware listed."""

    mode: str  # "constrained" | "discovery"
    tools: list[dict[str, Any]] = field(default_factory=list)
    middleware: list[dict[str, Any]] = field(default_factory=list)
    context: list[dict[str, Any]] = field(default_factory=list)  # role: context skills, with their text


def _reachable(policy: Policy, c: Candidate) -> tuple[bool, list[str] | None]:
    """Whether some call of `c` passes `policy` (argument values aside), and the specifiers
    that constrain its arguments, if any: every allowing one, as alternatives (`Bash(git:*)`
    beside `Bash(python3:*)` admits both)."""
    special = c.name == policy.owner or c.hidden
    if policy.rules is None:
        return not special, None
    if any(r.deny and not r.constraints and r.selects(c) for r in policy.rules):
        return False, None
    allowing = [r for r in policy.rules if not r.deny and r.selects(c)
                and (not special or (r.literal and r.selector == c.name))]
    if not allowing:
        return False, None
    if any(not r.constraints for r in allowing):  # `Bash(*)` beside `Bash(git:*)`: unrestricted
        return True, None
    return True, list(dict.fromkeys(r.text for r in allowing))


def is_constrained(allowed_tools: str | None) -> bool:
    if allowed_tools is None:
        return False
    return "*" not in allowed_tools.split()


def _excluded(tool: ToolDef, provider: str) -> bool:
    return (tool.name in NEVER_SHOWN or tool.name == provider or PROVIDER_TAG in tool.tags
            or "callback" in tool.tags or (tool.uri or "").startswith("callback://"))


def discover(lookup: Lookup, policies: Sequence[Policy], allowed_tools: str | None,
             provider: str) -> Discovered:
    """The skills to document for agent code bound by `policies` (the last one is the served
    skill's allowed-tools)."""
    if allowed_tools is not None:  # other agents' names (`Read`, `Bash(git:*)`) as they map here
        allowed_tools = translated(allowed_tools)
    constrained = is_constrained(allowed_tools)
    named = {t for t in (allowed_tools or "").split() if "(" not in t} | {
        t.split("(", 1)[0] for t in (allowed_tools or "").split() if "(" in t}
    found = Discovered("constrained" if constrained else "discovery")
    tools, _ = lookup.list_all()
    for tool in tools:
        if _excluded(tool, provider):
            continue
        if not constrained and tool.name not in named and tool.name not in DISCOVERY_TOOLS:
            continue
        candidate = Candidate(tool.name, tool.tags, tool.hidden)
        notes: list[list[str]] = []
        for policy in policies:
            ok, note = _reachable(policy, candidate)
            if not ok:
                break
            if note:
                notes.append(note)
        else:
            role = tool.metadata.get("role")
            if role == "context":
                _add_context(found, tool)
                continue
            doc = document(tool, notes, lookup)
            if role == "middleware":
                if params_of(tool, lookup):
                    found.middleware.append(doc)
            else:
                found.tools.append(doc)
    return found


MAX_CONTEXT_CHARS = 8_000  # of one context skill's text in the system prompt
MAX_CONTEXT_TOTAL = 32_000  # of all of them


def _add_context(found: Discovered, tool: ToolDef) -> None:
    """A `role: context` skill (every folder SKILL.md unless it says otherwise) is reference text
    for the agent: its body goes into the system prompt instead of a callable entry."""
    used = sum(len(c["text"]) for c in found.context)
    room = min(MAX_CONTEXT_CHARS, MAX_CONTEXT_TOTAL - used)
    if room <= 0:
        return
    text = tool.body.strip()
    if len(text) > room:
        text = text[:room] + f"\n[... {len(tool.body.strip()) - room} more characters not shown ...]"
    found.context.append({"name": tool.name, "description": one_line(tool.description), "text": text})


def _type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(v) for v in schema["enum"][:12])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        return f"{_type(schema.get('items'))}[]"
    return str(kind or "any")


def one_line(text: str) -> str:
    """A description as the system prompt shows it: one line. A skill's text (an MCP server's tool,
    a project someone else wrote) must not add headings of its own, such as a fake `# The task`."""
    return " ".join(text.split())


def document(tool: ToolDef, notes: Sequence[Sequence[str]] = (),
             lookup: Lookup | None = None) -> dict[str, Any]:
    """One skill as the template shows it: signature, param lines, returns, constraints (one list
    of alternative specifiers per binding grant)."""
    params = (params_of(tool, lookup) if lookup else tool.params) or {}
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = set(params.get("required") or ())
    lines = []
    for name, schema in (props or {}).items():
        schema = schema if isinstance(schema, dict) else {}
        lines.append({"name": name, "type": _type(schema), "required": name in required,
                      "description": one_line(str(schema.get("description") or "")),
                      "default": json.dumps(schema["default"]) if "default" in schema else None})
    shown = ", ".join(f"{p['name']}{'' if p['required'] else '?'}: {p['type']}" for p in lines)
    returns = returns_of(tool, lookup) if lookup else tool.metadata.get("returns")
    return {
        "name": tool.name,
        "description": one_line(tool.description),
        "signature": f"{{{shown}}}" if lines else ("{...}" if params else "{}"),
        "params": lines,
        "accepts_args": bool(params),
        "returns": json.dumps(returns, separators=(",", ":")) if isinstance(returns, dict) else None,
        "constraints": list(notes),
    }
