"""state-get: read one key of the key-value state (null when absent)."""

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
    from agentapps.stores.state import FileStateStore, MemoryStateStore

    stores = ctx.globals.internals.setdefault("state", {})
    if kind not in stores:
        root = ctx.globals.config.data_dir / "state"
        stores[kind] = MemoryStateStore() if kind == "memory" else FileStateStore(root)
    return stores[kind]
