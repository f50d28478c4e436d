"""callback-respond: answer one pending invocation of a callback ref."""

from agentapps.runtime import endpoint

frontmatter = {
    "name": "callback-respond",
    "description": (
        "Answer a pending invocation of a callback (its `id` from callback-wait): the invoker gets "
        "`result`, or, with `error`, fails with that message."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "ref": {"type": "string", "minLength": 1, "description": "The ref callback-create returned."},
                "id": {"type": "string", "minLength": 1, "description": "The invocation id from callback-wait."},
                "result": {"description": "The value the invoker receives (any JSON)."},
                "error": {"type": "string", "minLength": 1,
                          "description": "Fail the invocation with this message instead."},
            },
            "required": ["ref", "id"],
            "additionalProperties": False,
        },
        "returns": {"type": "object"},
        "tags": ["runtime", "callbacks"],
    },
}


def run(ctx, args):
    endpoint(ctx.globals, args["ref"]).respond(args["id"], args.get("result"), args.get("error"))
    return {"ok": True}
