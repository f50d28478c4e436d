"""callback-release: unregister a callback ref and fail its unanswered invocations."""

from agentapps import release_callback_ref

frontmatter = {
    "name": "callback-release",
    "description": (
        "Release a callback made by callback-create: it stops being invokable, and invocations "
        "still waiting for an answer fail. Returns {released: false} if it was already gone."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "ref": {"type": "string", "minLength": 1, "description": "The ref callback-create returned."},
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"released": {"type": "boolean"}}},
        "tags": ["runtime", "callbacks"],
    },
}


def run(ctx, args):
    return {"released": release_callback_ref(ctx.globals, args["ref"])}
