"""hub-update (hidden): update installed packages within their ranges and refs."""

from agentapps.io import approve_code_write
from agentapps.skill import hub_operation

frontmatter = {
    "name": "hub-update",
    "description": "Update packages: newer versions within their requested ranges, newer commits of the refs "
    "git sources follow.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain", "hub"],
        "params": {
            "type": "object",
            "properties": {
                "names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only these packages (default: all).",
                },
                "installDeps": {
                    "type": "boolean",
                    "default": False,
                    "description": "Approve pip-installing the Python dependencies the packages declare.",
                },
            },
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["results", "text"]},
    },
}


async def run(ctx, args):
    # installed packages are skill code: a call from another skill needs the trust gate's yes
    await approve_code_write(ctx, ".agent-apps/packages", {"operation": "hub-update", **args})
    return hub_operation(ctx, "update", args)
