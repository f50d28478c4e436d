"""gateway-receive: wait for the next message from the user (the terminal or stdin lines on the
command line); null when input has ended. A persistent agent calls it between turns."""

from agentapps.runtime import GATEWAY, receive

frontmatter = {
    "name": "gateway-receive",
    "description": ("Wait for the next message from the user (on the command line: the terminal, or stdin "
                    "lines); returns {text} or null when input has ended."),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "maxLength": 200,
                           "description": "Prompt shown on a terminal (default '> ')."},
            },
            "additionalProperties": False,
        },
        "returns": {"type": ["object", "null"]},
        "tags": ["runtime", "gateway"],
    },
}


async def run(ctx, args):
    text = await receive(args.get("prompt"))
    gateway = GATEWAY.get()
    return None if text is None else {"text": text, "from": gateway.name if gateway else "gateway"}
