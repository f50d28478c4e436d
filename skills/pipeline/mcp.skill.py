"""mcp: the MCP servers a skill declares in its own `metadata.mcp` become callable as skills.

Servers in the project's main skill are known from bootstrap on; this middleware adds the ones a
skill declares itself (or inherits with `$inherit`) when that skill runs. No server starts here:
each starts on first use (agentapps/mcp/registry.py).
"""

from agentapps.pipeline import registry_for

frontmatter = {
    "name": "mcp",
    "description": "Middleware: declare the MCP servers of metadata.mcp; their tools become skills <server>-<tool>.",
    "metadata": {
        "role": "middleware",
        "tags": ["pipeline"],
        "after": ["$pre-configure"],
        "before": ["$configure"],
        # its own key names itself, so it runs statically (without a chain), like the standard middleware
        "mcp": True,
    },
}


def run(ctx, args):
    target = ctx.target
    registry_for(ctx.globals).declare_for(target)
    mcp = target.meta.get("mcp")
    target.config["mcp"] = sorted(mcp) if isinstance(mcp, dict) else []
