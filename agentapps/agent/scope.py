"""Which context an agent run serves, and the context (with its policies) agent code calls from.

The agent skill is infrastructure, like middleware: it calls its provider and the guard skill
without the allowed-tools of its callers (a provider is never something the served skill lists)
and without the size limits on args (a system prompt may be long), exactly as the kernel treats
calls made by chain entries.
Agent code is different: every call it makes goes through a dedicated child context whose
policies are `allowedTools` (owned by the served skill) and, when agent code itself started this
agent, the grant of the agent code that started it.
"""

from __future__ import annotations

from typing import Any

from agentapps.context.admission import policy_for
from agentapps.context.caller import CODE_URI
from agentapps.context.context import Context
from agentapps.context.manager import new_context
from agentapps.tools.policy import Policy
from agentapps.types import ToolDef

CODE_TOOL = ToolDef("agent-code", "memory", {"name": "agent-code", "metadata": {"$inherit": False}},
                    uri=CODE_URI)


def started_by_agent_code(ctx: Context) -> bool:
    """Whether this agent run was started directly by agent code (the model chose its args)."""
    parent = ctx.parent
    return parent is not None and parent.untrusted


def code_policies(ctx: Context, allowed_tools: str | None, owner: str) -> tuple[Policy, ...]:
    """The grant agent code calls under: `allowed_tools` (owned by the served skill), and, for a
    sub-agent that agent code started, also everything the starting agent's code was bound by:
    what runs on behalf of the model never exceeds the model's grant."""
    own = policy_for(ctx.globals, allowed_tools, owner)
    inherited = ctx.parent.policies if started_by_agent_code(ctx) else ()  # type: ignore[union-attr]
    return inherited if own in inherited else (*inherited, own)


def code_context(ctx: Context, policies: tuple[Policy, ...]) -> Context:
    """A child of the agent context that agent code calls from: untrusted (bare names only)."""
    child = new_context(CODE_TOOL, {}, ctx, ctx.globals, untrusted=True)
    child.policies = policies
    return child


def make_infrastructure(ctx: Context) -> None:
    """From now on the agent context's own calls (provider, guard) are trusted pipeline calls:
    not bound by its callers' allowed-tools, not size-checked (agent code uses `code_context`)."""
    ctx.policies = ()
    ctx.trusted = True


def is_within(ctx: Context, ancestor: Context) -> bool:
    """Whether `ancestor` is `ctx` or one of its parents (used to refuse agent code calling the
    agent's own callback refs)."""
    node: Context | None = ctx
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def scope_of(ctx: Context) -> dict[str, Any]:
    """The nearest enclosing agent run's scope (`nonlocals.agent`), or {}."""
    found = ctx.nonlocals.get("agent")
    return found if isinstance(found, dict) else {}
