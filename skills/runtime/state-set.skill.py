"""state-set: write one key of the key-value state, optionally as a compare-and-swap."""

from agentapps.stores.state import store_for

frontmatter = {
    "name": "state-set",
    "description": (
        "Write a value to the key-value state, replacing any previous value. With `expect`, the write "
        "happens only if the current value equals `expect` (null means the key is absent); otherwise "
        "it fails with a conflict, so read-modify-write loops can retry."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 256,
                        "description": "The key to write, e.g. 'job:123:status'."},
                "value": {"description": "Any JSON value. On the command line a value is a string; "
                                         "pass other JSON with --arg-json '{\"value\": ...}'."},
                "expect": {"description": "Compare-and-swap: the value the key must hold now (JSON "
                                          "equality; null means the key must be absent)."},
                "store": {"type": "string", "enum": ["file", "memory"], "default": "file",
                          "description": "Backend: 'file' (.agent-apps/state/, survives restarts) or "
                                         "'memory' (this process only)."},
            },
            "required": ["key", "value"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"ok": {"const": True}, "key": {"type": "string"}}},
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    store = _store(ctx, args.get("store", "file"))
    if "expect" in args:
        store.set(args["key"], args["value"], expect=args["expect"])
    else:
        store.set(args["key"], args["value"])
    return {"ok": True, "key": args["key"]}


def _store(ctx, kind):
    return store_for(ctx.globals.internals, ctx.globals.config.data_dir, kind)
