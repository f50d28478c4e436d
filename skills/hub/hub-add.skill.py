"""hub-add (hidden): install a hub package and its dependencies, pinned in the lock file."""

from agentapps.io import approve_code_write
from agentapps.skill import hub_operation

frontmatter = {
    "name": "hub-add",
    "description": "Install a hub package (NAME, NAME@RANGE or NAME@VERSION, npm-style semver) and its "
    "dependencies into .agent-apps/packages/, pinned in agentapps-lock.json.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain", "hub"],
        "params": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "NAME[@RANGE], e.g. csv-tools@^1.2.0."},
                "installDeps": {
                    "type": "boolean",
                    "default": False,
                    "description": "Approve pip-installing the Python dependencies the packages declare.",
                },
            },
            "additionalProperties": False,
            "required": ["name"],
        },
        "returns": {"type": "object", "required": ["results", "text"]},
    },
}


async def run(ctx, args):
    # installed packages are skill code: a call from another skill needs the trust gate's yes
    await approve_code_write(ctx, ".agent-apps/packages", {"operation": "hub-add", **args})
    return hub_operation(ctx, "add", args)
