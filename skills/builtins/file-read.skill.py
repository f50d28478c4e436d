"""file-read: read a text file inside the project."""

from pathlib import Path

from agentapps.io import read_text
from agentapps.skill import checked_view, project_relative

frontmatter = {
    "name": "file-read",
    "description": "Read a text file inside the project (path relative to the project root), optionally a range of lines.",
    "metadata": {
        "tags": ["builtin", "files"],
        "action-args": ["path"],
        "params": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the project root."},
                "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Lines to skip."},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many lines."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "returns": {"type": "string"},
    },
}


def _root(ctx):
    cfg = ctx.globals.config
    return Path(cfg.project or cfg.cwd)


def policy_view(ctx, args):
    """`path` as the project-relative POSIX path the read resolves to (symlinks followed, no `..`)."""
    if isinstance(args.get("path"), str):
        return {**args, "path": project_relative(_root(ctx), args["path"])}
    return args


def run(ctx, args):
    view = checked_view(ctx)
    return read_text(_root(ctx), args["path"], offset=args.get("offset", 0), limit=args.get("limit"),
                     expect=view.get("path"))
