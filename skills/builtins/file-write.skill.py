"""file-write (hidden): write a text file inside the project, atomically."""

from pathlib import Path

from agentapps.io import approve_code_write, is_protected, write_text
from agentapps.skill import checked_view, project_relative, refuse_secret_name

frontmatter = {
    "name": "file-write",
    "description": ("Write (or append to) a text file inside the project, creating folders; never inside .git/ or "
                    ".agent-apps/; writing a skill file (*.skill.md, *.skill.py, SKILL.md) needs approval."),
    "metadata": {
        "visibility": "hidden",
        "tags": ["builtin", "files", "dangerous"],
        "action-args": ["path"],
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


def _root(ctx):
    cfg = ctx.globals.config
    return Path(cfg.project or cfg.cwd)


def policy_view(ctx, args):
    """`path` as the project-relative POSIX path the write lands on (symlinks followed, no `..`)."""
    if isinstance(args.get("path"), str):
        return {**args, "path": project_relative(_root(ctx), args["path"], for_write=True)}
    return args


async def run(ctx, args):
    root = _root(ctx)
    allowed = checked_view(ctx).get("path")  # what allowed-tools was shown
    rel = allowed if allowed is not None else project_relative(root, args["path"], for_write=True)
    # a file or folder name is never redacted (it lands on disk, in listings and commits as it is)
    refuse_secret_name(ctx.globals.internals, "file-write: the path", rel)
    if is_protected(rel, ctx):
        await approve_code_write(ctx, rel, {"append": bool(args.get("append")), "bytes": len(args["content"])})
    # the write walks again and refuses to land anywhere but the path that was checked
    return write_text(root, args["path"], args["content"], append=bool(args.get("append")), expect=rel)
