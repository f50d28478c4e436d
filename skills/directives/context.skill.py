"""context: `:context[args.x]{default=...}` inserts a value found by a path expression in the served context."""

from agentapps import ConfigError, directive_target
from agentapps.skill import MISSING, as_text, path_get

frontmatter = {
    "name": "context",
    "description": (
        "Directive :context[path]{default=...}: a value from the skill's context "
        "(args.*, locals.*, nonlocals.*, meta.*, tool.name, envelope.id), as text or JSON."
    ),
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}


def run(ctx, args):
    served = directive_target(ctx)  # ctx.envelope.parent.target: the skill whose prompt is expanded
    if served is None:
        return None  # running as a chain entry because a metadata key is named `context`
    expr, attrs = args.get("label", "").strip(), args.get("attrs") or {}
    value = path_get(served, expr, MISSING) if expr else MISSING
    if value is MISSING:
        if "default" in attrs:
            return attrs["default"]
        raise ConfigError(
            f"Skill '{served.tool.name}' uses :context[{expr}], which leads nowhere; use a path such "
            "as args.name, locals.config.cwd or tool.name, or add {default=...}.",
            skill=served.tool.name,
        )
    return as_text(value)
