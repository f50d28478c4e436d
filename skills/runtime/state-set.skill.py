"""state-set: write one key of the key-value state, optionally as a compare-and-swap."""

from agentapps.runtime import UNCONDITIONAL, store_for
from agentapps.skill import refuse_secret_name

frontmatter = {
    "name": "state-set",
    "description": (
        "Write a value to the key-value state, replacing any previous value. With `expect`, the write "
        "happens only if the current value equals `expect` (null means the key is absent), as one "
        "atomic step; otherwise it fails with a conflict, so read-modify-write loops can retry. With "
        "`ttl` (milliseconds) the key vanishes after that time."
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
                "ttl": {"type": "number", "exclusiveMinimum": 0, "maximum": 31_536_000_000,
                        "description": "Time to live in milliseconds: the key vanishes after it "
                                       "(default: it stays until deleted)."},
                "store": {"type": "string", "enum": ["file", "memory", "redis"],
                          "description": "Backend: 'file' (.agent-apps/state/, every process on this "
                                         "machine), 'memory' (this process) or 'redis' (every process "
                                         "using AGENTAPPS_REDIS_URL). Default: the project's "
                                         "`stores:` choice, else 'file'."},
            },
            "required": ["key", "value"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"ok": {"const": True}, "key": {"type": "string"}}},
        "tags": ["runtime", "state"],
    },
}


def run(ctx, args):
    ttl = args.get("ttl")
    key = refuse_secret_name(ctx.globals.internals, "The state key", args["key"])
    store_for(ctx.globals, args.get("store")).set(
        key, args["value"], expect=args.get("expect", UNCONDITIONAL), ttl=None if ttl is None else ttl / 1000)
    return {"ok": True, "key": args["key"]}
