"""Public: what middleware and the execution leaves use. Stable within a major version (see `agentapps`).

    from agentapps.pipeline import interface, validate

The served skill and its chain:
    interface(ctx, key)             the served skill's `params` or `returns` schema (None: none)
    cascaded(tool, g)               a skill's cascaded metadata (`.meta`)
    chain_plan(tool, meta, g)       the middleware chain that skill's calls run through
    call_tool(ctx)                  call the served code skill's `run` with its args (the `execute` leaf)
    expand_prompt(ctx)              the served markdown skill's prompt, template rendered, directives expanded
Checks:
    validate(value, schema, cache, *, skill, where)   ArgsError/ReturnsError unless the schema admits it
    refused_config(skill, middleware, exc, file, line)  the error for a metadata key a middleware refuses
    candidate(ctx), policy_args(ctx)  the call as the permission checks see it
    check_chain(policies, candidate, args)  DeniedError unless every allowed-tools policy admits the call
    reads_args(policies)            whether any policy looks at a call's arguments
    rules_of(meta, owner), needs_approval(rule_sets, candidate, view), decide(...)   `metadata.trust`
    written_at(served, path), place(exc, served)   the file and line that set a metadata key
Execution leaves:
    model_settings(value, skill)    a skill's `model` metadata as the agent's config (ConfigError if wrong)
    run_agent(ctx, args)            the `agent` skill: one agent run end to end
    run_bedrock(ctx, args), run_openai(ctx, args), run_anthropic(ctx, args), run_scripted(ctx, args)
                                    the bundled providers' loops
    registry_for(g)                 the project's MCP servers (`mcp://` refs)

Names are imported on first use: importing this module imports nothing else (`expand_prompt`
brings the template and directive machinery, the agent names bring the sandbox and providers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.exports import lazy_exports

if TYPE_CHECKING:
    from agentapps.agent.anthropic_provider import run_anthropic
    from agentapps.agent.config import model_settings
    from agentapps.agent.converse import run_bedrock
    from agentapps.agent.openai_provider import run_openai
    from agentapps.agent.runner import run_agent
    from agentapps.agent.scripted import run_scripted
    from agentapps.context.calls import call_tool
    from agentapps.context.origin import place, written_at
    from agentapps.context.plan import cascaded, chain_plan, interface
    from agentapps.directives.expand import expand_prompt
    from agentapps.mcp.registry import registry_for
    from agentapps.schemas.validation import refused_config, validate
    from agentapps.tools.policy import check_chain, reads_args
    from agentapps.tools.views import candidate, policy_args
    from agentapps.trust import decide, needs_approval, rules_of

_EXPORTS = {
    "interface": "agentapps.context.plan",
    "cascaded": "agentapps.context.plan",
    "chain_plan": "agentapps.context.plan",
    "call_tool": "agentapps.context.calls",
    "expand_prompt": "agentapps.directives.expand",
    "validate": "agentapps.schemas.validation",
    "refused_config": "agentapps.schemas.validation",
    "candidate": "agentapps.tools.views",
    "policy_args": "agentapps.tools.views",
    "check_chain": "agentapps.tools.policy",
    "reads_args": "agentapps.tools.policy",
    "rules_of": "agentapps.trust",
    "needs_approval": "agentapps.trust",
    "decide": "agentapps.trust",
    "written_at": "agentapps.context.origin",
    "place": "agentapps.context.origin",
    "model_settings": "agentapps.agent.config",
    "run_agent": "agentapps.agent.runner",
    "run_bedrock": "agentapps.agent.converse",
    "run_openai": "agentapps.agent.openai_provider",
    "run_anthropic": "agentapps.agent.anthropic_provider",
    "run_scripted": "agentapps.agent.scripted",
    "registry_for": "agentapps.mcp.registry",
}

__all__ = ["call_tool", "candidate", "cascaded", "chain_plan", "check_chain", "decide", "expand_prompt",
           "interface", "model_settings", "needs_approval", "place", "policy_args", "reads_args",
           "refused_config", "registry_for", "rules_of", "run_agent", "run_anthropic", "run_bedrock", "run_openai",
           "run_scripted", "validate",
           "written_at"]

__getattr__ = lazy_exports(__name__, _EXPORTS)
