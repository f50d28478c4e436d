"""callback-wait: take the next unanswered invocation of a callback ref."""

from agentapps.runtime import endpoint

frontmatter = {
    "name": "callback-wait",
    "description": (
        "Wait for the next invocation of a callback made by callback-create and return it as "
        "{id, args}; answer it with callback-respond. Fails with a limit error after `timeout` "
        "milliseconds."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "ref": {"type": "string", "minLength": 1, "description": "The ref callback-create returned."},
                "timeout": {"type": "number", "minimum": 0, "maximum": 86_400_000, "default": 60_000,
                            "description": "Milliseconds to wait for an invocation (default 60000)."},
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"id": {"type": "string"}, "args": {"type": "object"}},
                    "required": ["id", "args"]},
        "tags": ["runtime", "callbacks"],
    },
}


async def run(ctx, args):
    return await endpoint(ctx.globals, args["ref"]).next_call(args.get("timeout", 60_000) / 1000)
