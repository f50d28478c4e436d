"""callback-create: make a callback ref, a skill whose invocations wait for callback-respond."""

from agentapps import create_callback_ref

frontmatter = {
    "name": "callback-create",
    "description": (
        "Create a callback endpoint. Returns {ref}: an in-memory skill named '{label}-{8 hex}' that "
        "anyone can invoke like any skill (subject to allowed-tools). Each invocation waits until "
        "you take it with callback-wait and answer it with callback-respond."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,54}$", "default": "callback",
                          "description": "Name prefix, so allowed-tools can admit it as 'label-*'."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 86_400_000,
                            "description": "Milliseconds an invoker waits for its answer before "
                                           "failing (default: no limit)."},
                "store": {"type": "string", "enum": ["memory", "redis"],
                          "description": "'memory': invokable in this process; 'redis': by name from "
                                         "any process of the project (AGENTAPPS_REDIS_URL), failing "
                                         "clearly once this process exits. Default: the project's "
                                         "`stores:` choice, else 'memory'."},
            },
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]},
        "tags": ["runtime", "callbacks"],
    },
}


def run(ctx, args):
    timeout = args.get("timeout")
    ref = create_callback_ref(ctx.globals, label=args.get("label", "callback"),
                              timeout=None if timeout is None else timeout / 1000, store=args.get("store"))
    return {"ref": ref}
