"""skill-list: the skills visible on the search path (what `agentapps list` prints)."""

from agentapps.skill import list_tools

frontmatter = {
    "name": "skill-list",
    "description": "List the skills available on the search path, optionally filtered by a query or tags.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Case-insensitive text to find in names and descriptions."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Only skills carrying all these tags."},
                "includeHidden": {"type": "boolean", "description": "Also list skills with visibility: hidden."},
            },
            "additionalProperties": False,
        },
        "returns": {"type": "array", "items": {"type": "object"}},
        "tags": ["builtin", "discovery"],
    },
}


def run(ctx, args):
    items, problems = list_tools(
        ctx.globals.lookup,
        query=args.get("query"),
        tags=args.get("tags") or [],
        include_hidden=bool(args.get("includeHidden")),
    )
    ctx.locals.problems = [str(p) for p in problems]
    return items
