"""hub-remove (hidden): uninstall a package and drop it from the lock file."""

from agentapps.io import approve_code_write
from agentapps.skill import hub_operation

frontmatter = {
    "name": "hub-remove",
    "description": "Uninstall a package (and the registry dependencies nothing else needs) and drop it from "
    "agentapps-lock.json.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain", "hub"],
        "params": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The package to remove."}},
            "additionalProperties": False,
            "required": ["name"],
        },
        "returns": {"type": "object", "required": ["results", "text"]},
    },
}


async def run(ctx, args):
    # installed packages are skill code: a call from another skill needs the trust gate's yes
    await approve_code_write(ctx, ".agent-apps/packages", {"operation": "hub-remove", **args})
    return hub_operation(ctx, "remove", args)
