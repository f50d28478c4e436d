"""agent-execute: the leaf for markdown skills — hand the expanded prompt to the `agent` skill.

With --dry-run the agent gets `dryRun: true` and returns its system prompt and user message.
Agent code is bound by the served skill's own allowed-tools (passed as `allowedTools`), as the
skill's own code would be. A relative `model.script` is resolved against
the skill file's folder. The agent reaches the served context as `ctx.envelope.parent.target`.
"""

from agentapps import ConfigError, SkillNotFoundError
from agentapps.pipeline import interface, model_settings

frontmatter = {
    "name": "agent-execute",
    "description": "Middleware: run a markdown skill's prompt through the `agent` skill.",
    "metadata": {"role": "middleware", "tags": ["pipeline"], "applies-to": "markdown"},
}


async def run(ctx, args):
    target = ctx.target
    if target.tool.kind != "markdown":
        return None
    prompt = target.locals.get("prompt") or {}
    if not _has_agent(ctx):
        if ctx.globals.internals.dry_run:
            return prompt.get("expanded", target.tool.body)
        raise ConfigError(
            f"Skill '{target.tool.name}' is a markdown skill, but no agent provider is available: "
            "no skill named 'agent' is on the search path.",
            skill=target.tool.name,
            file=target.tool.path,
        )
    try:
        config = model_settings(target.meta.get("model"), target.tool.name)
    except ConfigError as exc:
        from agentapps.pipeline import place

        place(exc, target)  # at the line that sets it
        raise
    script = config.get("script")
    if isinstance(script, str) and target.tool.path is not None:
        config["script"] = str(target.tool.path.parent / script)
    agent_args = {
        "prompt": prompt.get("expanded", target.tool.body),
        "config": config,
        "allowedTools": target.tool.allowed_tools,
        "returns": interface(target, "returns"),
        "args": dict(target.args),
        "skillName": target.tool.name,
    }
    if ctx.globals.internals.dry_run:  # the agent runs (to show the system prompt) but calls no model
        agent_args["dryRun"] = True
    return await ctx.manager.invoke("agent", agent_args)


def _has_agent(ctx):
    try:
        ctx.globals.lookup.find("agent")
    except SkillNotFoundError:
        return False
    return True
