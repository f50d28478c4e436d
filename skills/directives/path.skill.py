"""path: `:path[relative]` inserts the absolute path of a file relative to the served skill's file."""

import os

from agentapps import directive_target

frontmatter = {
    "name": "path",
    "description": "Directive :path[relative/file]: the absolute path of a file next to the skill's own file.",
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}


def run(ctx, args):
    served = directive_target(ctx)  # ctx.envelope.parent.target: the skill whose prompt is expanded
    if served is None:
        return None  # running as a chain entry because a metadata key is named `path`
    config = ctx.globals.config
    base = served.tool.path.parent if served.tool.path else (config.project or config.cwd)
    # Only a name for the prompt: no file is read, so there is nothing to confine here.
    return os.path.normpath(os.path.join(base, args.get("label", "").strip() or "."))
