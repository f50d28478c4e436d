"""hub-install (hidden): install exactly what the lock file pins (`agentapps install`)."""

from agentapps.io import approve_code_write
from agentapps.skill import hub_operation

frontmatter = {
    "name": "hub-install",
    "description": "Install exactly what agentapps-lock.json pins into .agent-apps/packages/ (frozen: never "
    "change the lock, fail on any mismatch).",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain", "hub"],
        "params": {
            "type": "object",
            "properties": {
                "frozen": {
                    "type": "boolean",
                    "default": False,
                    "description": "Fail instead of pinning anything; the CI mode.",
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
    await approve_code_write(ctx, ".agent-apps/packages", {"operation": "hub-install", **args})
    return hub_operation(ctx, "install", args)
