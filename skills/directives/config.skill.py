"""config: `:config[model.id]{default=...}` inserts a value of the served skill's cascaded metadata."""

from agentapps import ConfigError, directive_target
from agentapps.skill import MISSING, as_text, path_get

frontmatter = {
    "name": "config",
    "description": "Directive :config[dotted.path]{default=...}: a value of the skill's cascaded metadata.",
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}


def run(ctx, args):
    served = directive_target(ctx)  # ctx.envelope.parent.target: the skill whose prompt is expanded
    if served is None:
        return None  # running as a chain entry because a metadata key is named `config`
    expr, attrs = args.get("label", "").strip(), args.get("attrs") or {}
    value = path_get(served.meta, expr, MISSING) if expr else MISSING
    if value is MISSING:
        if "default" in attrs:
            return attrs["default"]
        raise ConfigError(
            f"Skill '{served.tool.name}' uses :config[{expr}], but its cascaded metadata has no such "
            "value; set it (in the skill, the main skill or default) or add {default=...}.",
            skill=served.tool.name,
        )
    return as_text(value)
