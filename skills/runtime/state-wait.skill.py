"""state-wait: block until a state key exists (another skill or process sets it), then return its value."""

from agentapps import LimitError
from agentapps.runtime import store_for

frontmatter = {
    "name": "state-wait",
    "description": (
        "Wait until a key exists in the key-value state and return its value: at once if it is set "
        "already, otherwise as soon as another skill (or, with the file and redis stores, another "
        "process) sets it. Fails with a limit error after `timeout` milliseconds."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 256,
                        "description": "The key to wait for, e.g. 'job:123:done'."},
                "timeout": {"type": "number", "minimum": 0, "maximum": 86_400_000, "default": 60_000,
                            "description": "Milliseconds to wait before giving up (default 60000)."},
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


async def run(ctx, args):
    store = store_for(ctx.globals, args.get("store"))
    try:
        return await store.wait(args["key"], args.get("timeout", 60_000) / 1000)
    except LimitError as exc:
        exc.skill = "state-wait"
        raise
