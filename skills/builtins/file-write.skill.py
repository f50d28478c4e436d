"""file-write (hidden): write a text file inside the project, atomically."""

from pathlib import Path

from agentapps.files.ops import write_text

frontmatter = {
    "name": "file-write",
    "description": "Write (or append to) a text file inside the project, creating folders; never inside .git/ or .agent-apps/.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["builtin", "files", "dangerous"],
        "params": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the project root."},
                "content": {"type": "string", "description": "The new text."},
                "append": {"type": "boolean", "default": False, "description": "Append instead of replacing."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["path", "bytes"]},
    },
}


def run(ctx, args):
    cfg = ctx.globals.config
    return write_text(Path(cfg.project or cfg.cwd), args["path"], args["content"], append=bool(args.get("append")))
