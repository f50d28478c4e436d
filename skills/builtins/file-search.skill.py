"""file-search: find lines matching a regular expression in the project's text files."""

from pathlib import Path

from agentapps.io import normalize_glob, search_files
from agentapps.skill import project_relative

frontmatter = {
    "name": "file-search",
    "description": ("Search the project's text files for a regular expression (RE2 syntax; files "
                    "ignored by .gitignore are skipped); returns matching lines with path and line number."),
    "metadata": {
        "tags": ["builtin", "files"],
        "action-args": ["path"],  # `glob` only filters inside the folder searched
        "params": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "maxLength": 1000,
                            "description": "Regular expression (RE2: no lookaround or backreferences)."},
                "path": {"type": "string", "default": ".", "description": "Folder to search, relative to the project root."},
                "glob": {"type": "string", "default": "**/*", "description": "Only files whose relative path matches, e.g. '**/*.py'."},
                "ignoreCase": {"type": "boolean", "default": False},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100,
                          "description": "At most this many matching lines."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["matches", "truncated", "files"]},
    },
}


def _root(ctx):
    cfg = ctx.globals.config
    return Path(cfg.project or cfg.cwd)


def policy_view(ctx, args):
    """`path` as the project-relative folder searched, `glob` as file-list normalises it."""
    view = dict(args)
    path = args.get("path", ".")
    if isinstance(path, str):
        view["path"] = project_relative(_root(ctx), path) or "."
    glob = args.get("glob", "**/*")
    if isinstance(glob, str):
        view["glob"] = normalize_glob(glob)
    return view


def run(ctx, args):
    return search_files(_root(ctx), args["pattern"], path=args.get("path", "."), glob=args.get("glob", "**/*"),
                  ignore_case=args.get("ignoreCase", False), limit=args.get("limit", 100))
