"""file-read: read a text file inside the project."""

from pathlib import Path

from agentapps.files.ops import read_text

frontmatter = {
    "name": "file-read",
    "description": "Read a text file inside the project (path relative to the project root), optionally a range of lines.",
    "metadata": {
        "tags": ["builtin", "files"],
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


def run(ctx, args):
    cfg = ctx.globals.config
    return read_text(Path(cfg.project or cfg.cwd), args["path"], offset=args.get("offset", 0), limit=args.get("limit"))
