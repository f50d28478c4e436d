"""skill-file: read a file beside the calling folder skill's SKILL.md (read-only)."""

from agentapps import UsageError
from agentapps.io import folder_files, read_text, skill_folder
from agentapps.skill import caller_skill

frontmatter = {
    "name": "skill-file",
    "description": ("Read a file from the calling folder skill's own folder (references/, scripts/, templates "
                    "beside its SKILL.md); path '.' lists them. Read-only."),
    "metadata": {
        "tags": ["builtin", "files"],
        "params": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "default": ".",
                         "description": "File path relative to the skill's folder ('.' lists the files)."},
                "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Lines to skip."},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many lines."},
            },
            "additionalProperties": False,
        },
    },
}


def run(ctx, args):
    caller = caller_skill(ctx)
    folder = skill_folder(caller.tool if caller is not None else None)
    if folder is None:
        who = f"'{caller.tool.name}' is not one" if caller is not None else "it was called directly"
        raise UsageError(f"skill-file reads the folder of the folder skill (NAME/SKILL.md) that calls it; {who}.")
    path = args.get("path", ".")
    if path.strip() in ("", ".", "./"):
        return folder_files(folder)
    return read_text(folder, path, offset=args.get("offset", 0), limit=args.get("limit"),
                     label="skill-file", where=f"in the folder of skill '{caller.tool.name}'")
