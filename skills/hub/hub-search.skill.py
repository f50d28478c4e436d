"""hub-search (hidden): search the hub registries for packages."""

from agentapps.skill import hub_operation

frontmatter = {
    "name": "hub-search",
    "description": "Search the hub registries: packages whose name, description, keywords or skill names "
    "contain the query (any case); an exact name first, then by name; no query lists all.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain", "hub"],
        "params": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Text to look for (empty: every package)."}
            },
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["results", "text"]},
    },
}


def run(ctx, args):
    return hub_operation(ctx, "search", args)
