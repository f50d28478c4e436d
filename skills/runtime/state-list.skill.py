"""state-list: the keys of the key-value state, optionally those starting with a prefix."""

from agentapps.stores.state import store_for

frontmatter = {
    "name": "state-list",
    "description": "List the keys in the key-value state (sorted), optionally only those starting with `prefix`.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "prefix": {"type": "string", "description": "Only keys starting with this text, e.g. 'user:alice:'."},
                "store": {"type": "string", "enum": ["file", "memory"], "default": "file",
                          "description": "Backend: 'file' (.agent-apps/state/, survives restarts) or "
                                         "'memory' (this process only)."},
            },
            "additionalProperties": False,
        },
        "returns": {"type": "array", "items": {"type": "string"}},
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    return _store(ctx, args.get("store", "file")).list(args.get("prefix", ""))


def _store(ctx, kind):
    return store_for(ctx.globals.internals, ctx.globals.config.data_dir, kind)
