"""hello: the smallest useful code skill; the quick start runs it."""

frontmatter = {
    "name": "hello",
    "description": "Say hello: a tiny bundled code skill to check that agentapps works.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Who to greet.", "default": "world"},
            },
            "additionalProperties": False,
        },
        "tags": ["example"],
    },
}


def run(ctx, args):
    return f"Hello, {args.get('name', 'world')}!"
