"""file-list: list project files matching a glob."""

from pathlib import Path

from agentapps.io import list_files, normalize_glob

frontmatter = {
    "name": "file-list",
    "description": "List files in the project matching a glob such as 'src/**/*.py' (paths relative to the project root).",
    "metadata": {
        "tags": ["builtin", "files"],
        "action-args": ["glob"],
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


def policy_view(ctx, args):
    """`glob` as file-list matches it: the default filled in, `./` and empty segments dropped."""
    glob = args.get("glob", "**/*")
    return {**args, "glob": normalize_glob(glob)} if isinstance(glob, str) else args


def run(ctx, args):
    cfg = ctx.globals.config
    return list_files(Path(cfg.project or cfg.cwd), args.get("glob", "**/*"), limit=args.get("limit", 1000))
