"""state-get: read one key of the key-value state (null when absent)."""

from agentapps.runtime import store_for

frontmatter = {
    "name": "state-get",
    "description": "Read a value from the key-value state by key. Returns null if the key is not set.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 256,
                        "description": "The key to read, e.g. 'user:alice:prefs'."},
                "store": {"type": "string", "enum": ["file", "memory", "redis"],
                          "description": "Backend: 'file' (.agent-apps/state/, every process on this "
                                         "machine), 'memory' (this process) or 'redis' (every process "
                                         "using AGENTAPPS_REDIS_URL). Default: the project's "
                                         "`stores:` choice, else 'file'."},
            },
            "required": ["key"],
            "additionalProperties": False,
        },
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    return store_for(ctx.globals, args.get("store")).get(args["key"])
