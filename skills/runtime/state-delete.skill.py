"""state-delete: remove one key of the key-value state."""

from agentapps.runtime import store_for

frontmatter = {
    "name": "state-delete",
    "description": "Delete a key from the key-value state. Returns {ok, existed}.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 256,
                        "description": "The key to delete."},
                "store": {"type": "string", "enum": ["file", "memory", "redis"],
                          "description": "Backend: 'file' (.agent-apps/state/, every process on this "
                                         "machine), 'memory' (this process) or 'redis' (every process "
                                         "using AGENTAPPS_REDIS_URL). Default: the project's "
                                         "`stores:` choice, else 'file'."},
            },
            "required": ["key"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"ok": {"const": True}, "existed": {"type": "boolean"}}},
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    existed = store_for(ctx.globals, args.get("store")).delete(args["key"])
    return {"ok": True, "existed": existed}
