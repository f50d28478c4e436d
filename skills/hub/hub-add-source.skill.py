"""hub-add-source (hidden): install the Agent Skills of a git repository, pinned to its commit."""

from agentapps.io import approve_code_write
from agentapps.skill import hub_operation

frontmatter = {
    "name": "hub-add-source",
    "description": "Install the Agent Skills of a git repository (github:OWNER/REPO[/PATH][@REF], a git URL or "
    "a local folder) into .agent-apps/packages/, pinned to its commit in agentapps-lock.json.",
    "metadata": {
        "visibility": "hidden",
        "tags": ["toolchain", "hub"],
        "params": {
            "type": "object",
            "properties": {
                "source": {
                    "type": "string",
                    "description": "github:OWNER/REPO[/PATH][@REF], a git "
                    "URL[#REF], or a local folder[#REF].",
                },
                "name": {
                    "type": "string",
                    "description": "Package name (default: the folder's or the repository's).",
                },
                "path": {
                    "type": "string",
                    "description": "Folder inside the repository (default: "
                    "skills/ when there is one, else the root).",
                },
                "ref": {
                    "type": "string",
                    "description": "Branch, tag or commit (default: the default branch).",
                },
                "installDeps": {
                    "type": "boolean",
                    "default": False,
                    "description": "Approve pip-installing the Python dependencies the package declares.",
                },
            },
            "additionalProperties": False,
            "required": ["source"],
        },
        "returns": {"type": "object", "required": ["results", "text"]},
    },
}


async def run(ctx, args):
    # installed packages are skill code: a call from another skill needs the trust gate's yes
    await approve_code_write(ctx, ".agent-apps/packages", {"operation": "hub-add-source", **args})
    return hub_operation(ctx, "add-source", args)
