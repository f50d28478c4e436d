"""file-list: list project files matching a glob."""

from pathlib import Path

from agentapps.files.ops import list_files

frontmatter = {
    "name": "file-list",
    "description": "List files in the project matching a glob such as 'src/**/*.py' (paths relative to the project root).",
    "metadata": {
        "tags": ["builtin", "files"],
        "params": {
            "type": "object",
            "properties": {
                "glob": {"type": "string", "default": "**/*", "description": "fnmatch-style pattern on relative paths."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000},
            },
            "additionalProperties": False,
        },
        "returns": {"type": "array", "items": {"type": "string"}},
    },
}


def run(ctx, args):
    cfg = ctx.globals.config
    return list_files(Path(cfg.project or cfg.cwd), args.get("glob", "**/*"), limit=args.get("limit", 1000))
