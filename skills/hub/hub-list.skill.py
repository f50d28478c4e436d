"""hub-list (hidden): the packages the lock file pins, and whether each is installed as pinned."""

from agentapps.skill import hub_operation

frontmatter = {
    "name": "hub-list",
    "description": "List the packages agentapps-lock.json pins and whether each is installed as pinned.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain", "hub"],
        "params": {"type": "object", "properties": {}, "additionalProperties": False},
        "returns": {"type": "object", "required": ["results", "text"]},
    },
}


def run(ctx, args):
    return hub_operation(ctx, "list", args)
