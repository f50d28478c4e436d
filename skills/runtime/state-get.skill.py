"""state-get: read one key of the key-value state (null when absent)."""

from agentapps.stores.state import store_for

frontmatter = {
    "name": "state-get",
    "description": "Read a value from the key-value state by key. Returns null if the key is not set.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 256,
                        "description": "The key to read, e.g. 'user:alice:prefs'."},
                "store": {"type": "string", "enum": ["file", "memory"], "default": "file",
                          "description": "Backend: 'file' (.agent-apps/state/, survives restarts) or "
                                         "'memory' (this process only)."},
            },
            "required": ["key"],
            "additionalProperties": False,
        },
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    return _store(ctx, args.get("store", "file")).get(args["key"])


def _store(ctx, kind):
    return store_for(ctx.globals.internals, ctx.globals.config.data_dir, kind)
