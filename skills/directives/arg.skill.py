"""arg: `:arg[name]{default=...}` inserts one argument of the skill being served, literally."""

import json

from agentapps import ArgsError, directive_target
from agentapps.skill import MISSING, path_get

frontmatter = {
    "name": "arg",
    "description": "Directive :arg[name]{default=...}: an argument of the skill (inserted literally, never expanded).",
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}


def run(ctx, args):
    served = directive_target(ctx)  # ctx.envelope.parent.target: the skill whose prompt is expanded
    if served is None:
        return None  # running as a chain entry because a metadata key is named `arg`
    label, attrs = args.get("label", "").strip(), args.get("attrs") or {}
    value = served.args[label] if label in served.args else path_get(served.args, label, MISSING)
    if value is MISSING or not label:
        if "default" in attrs:
            return attrs["default"]
        raise ArgsError(
            f"Skill '{served.tool.name}' uses :arg[{label}] but was called without '{label}'; pass it "
            f"(--{label} VALUE) or give the directive a default: :arg[{label}]{{default=...}}.",
            skill=served.tool.name,
        )
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
