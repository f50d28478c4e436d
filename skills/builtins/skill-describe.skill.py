"""skill-describe: one skill's interface, cascaded metadata and middleware chain."""

from agentapps.pipeline import cascaded, chain_plan
from agentapps.skill import describe, params_of, returns_of

frontmatter = {
    "name": "skill-describe",
    "description": "Describe one skill: description, params, returns, allowed-tools, metadata and middleware chain.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Skill name or path to a skill file."}},
            "required": ["name"],
            "additionalProperties": False,
        },
        "returns": {"type": "object"},
        "tags": ["builtin", "discovery"],
    },
}


def run(ctx, args):
    g = ctx.globals
    tool = g.lookup.resolve(args["name"])
    meta = cascaded(tool, g).meta
    plan = chain_plan(tool, meta, g)
    return describe(tool, meta, plan.entries, plan.static, params_of(tool, g.lookup), returns_of(tool, g.lookup))
