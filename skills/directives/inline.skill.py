"""inline: `:inline[file]` inserts a file's contents (relative to the skill's file, confined to the project)."""

import os

from agentapps import ConfigError, LimitError, directive_target
from agentapps.skill import resolve_in_project

frontmatter = {
    "name": "inline",
    "description": "Directive :inline[file]: a text file's contents, inserted literally; only files inside the project.",
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}

MAX_BYTES = 256 * 1024


def run(ctx, args):
    served = directive_target(ctx)  # ctx.envelope.parent.target: the skill whose prompt is expanded
    if served is None:
        return None  # running as a chain entry because a metadata key is named `inline`
    config = ctx.globals.config
    root = config.project or config.cwd
    base = served.tool.path.parent if served.tool.path else root
    label = args.get("label", "").strip()
    where = {"skill": served.tool.name}
    real = resolve_in_project(root, os.path.join(base, label) if label else "")  # DeniedError outside
    if not real.is_file():
        raise ConfigError(f"Skill '{served.tool.name}' inlines {label!r}, which is not a file.", **where)
    if real.stat().st_size > MAX_BYTES:
        raise LimitError(
            f"Skill '{served.tool.name}' inlines {label!r}, which is larger than {MAX_BYTES // 1024} KiB; "
            "pass its path (:path[...]) and let the skill read it instead.", **where,
        )
    try:
        return real.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"Skill '{served.tool.name}' inlines {label!r}, which is not UTF-8 text.", **where) from None
