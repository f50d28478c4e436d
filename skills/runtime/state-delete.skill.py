"""state-delete: remove one key of the key-value state."""

from agentapps.stores.state import store_for

frontmatter = {
    "name": "state-delete",
    "description": "Delete a key from the key-value state. Returns {ok, existed}.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 256,
                        "description": "The key to delete."},
                "store": {"type": "string", "enum": ["file", "memory"], "default": "file",
                          "description": "Backend: 'file' (.agent-apps/state/, survives restarts) or "
                                         "'memory' (this process only)."},
            },
            "required": ["key"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"ok": {"const": True}, "existed": {"type": "boolean"}}},
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    existed = _store(ctx, args.get("store", "file")).delete(args["key"])
    return {"ok": True, "existed": existed}


def _store(ctx, kind):
    return store_for(ctx.globals.internals, ctx.globals.config.data_dir, kind)
