"""env: `:env[NAME]{default=...}` inserts an environment variable the skill declares in `metadata.env`."""

import os

from agentapps import DeniedError, directive_target

frontmatter = {
    "name": "env",
    "description": "Directive :env[NAME]{default=...}: an environment variable declared in the skill's metadata.env list.",
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}


def run(ctx, args):
    served = directive_target(ctx)  # ctx.envelope.parent.target: the skill whose prompt is expanded
    if served is None:
        return None  # running as a chain entry: `metadata.env` names this skill; nothing to do
    name, attrs = args.get("label", "").strip(), args.get("attrs") or {}
    declared = served.meta.get("env") or []
    declared = [declared] if isinstance(declared, str) else declared
    if name not in [str(d) for d in declared]:
        # Only the name is ever shown, never a value.
        raise DeniedError(
            f"Skill '{served.tool.name}' may not read environment variable {name[:80]!r}: it is not "
            "declared. List it in the skill's `metadata.env` if the prompt should see it.",
            skill=served.tool.name,
        )
    value = os.environ.get(name, "")
    return value if value else attrs.get("default", "")
