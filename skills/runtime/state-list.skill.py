"""state-list: the keys of the key-value state, optionally those starting with a prefix."""

from agentapps.runtime import store_for

frontmatter = {
    "name": "state-list",
    "description": "List the keys in the key-value state (sorted), optionally only those starting with `prefix`.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "prefix": {"type": "string", "description": "Only keys starting with this text, e.g. 'user:alice:'."},
                "store": {"type": "string", "enum": ["file", "memory", "redis"],
                          "description": "Backend: 'file' (.agent-apps/state/, every process on this "
                                         "machine), 'memory' (this process) or 'redis' (every process "
                                         "using AGENTAPPS_REDIS_URL). Default: the project's "
                                         "`stores:` choice, else 'file'."},
            },
            "additionalProperties": False,
        },
        "returns": {"type": "array", "items": {"type": "string"}},
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    return store_for(ctx.globals, args.get("store")).list(args.get("prefix", ""))
