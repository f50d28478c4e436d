"""agent-execute: the leaf for markdown skills — hand the expanded prompt to the `agent` skill."""

from agentapps.errors import ConfigError, SkillNotFoundError

frontmatter = {
    "name": "agent-execute",
    "description": "Middleware: run a markdown skill's prompt through the `agent` skill.",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


async def run(ctx, args):
    target = ctx.target
    if target.tool.kind != "markdown":
        return None
    prompt = target.locals.get("prompt") or {}
    if ctx.globals.internals.get("dry_run") and not _has_agent(ctx):
        return prompt.get("expanded", target.tool.body)
    try:
        ctx.globals.lookup.find("agent")
    except SkillNotFoundError:
        raise ConfigError(
            f"Skill '{target.tool.name}' is a markdown skill, but no agent provider is available: "
            "no skill named 'agent' is on the search path.",
            skill=target.tool.name,
            file=target.tool.path,
        ) from None
    return await ctx.manager.invoke(
        "agent",
        {
            "prompt": prompt.get("expanded", target.tool.body),
            "config": target.meta.get("model") or {},
            "allowedTools": target.tool.allowed_tools,
            "returns": target.tool.metadata.get("returns"),
            "args": dict(target.args),
            "skillName": target.tool.name,
        },
    )


def _has_agent(ctx):
    try:
        ctx.globals.lookup.find("agent")
    except SkillNotFoundError:
        return False
    return True
