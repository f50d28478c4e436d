"""http: an HTTP(S) request to a public address (private ones only through AGENTAPPS_HTTP_ALLOW)."""

import asyncio

from agentapps.net.http import fetch

frontmatter = {
    "name": "http",
    "description": "Make an HTTP or HTTPS request to a public host; returns status, headers and the body as text.",
    "metadata": {
        "tags": ["builtin", "network"],
        "params": {
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "http:// or https:// URL."},
                "method": {"type": "string", "default": "GET", "description": "GET, POST, PUT, PATCH, DELETE, HEAD."},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": {"type": "string", "description": "Request body (text)."},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 300, "default": 60,
                            "description": "Seconds for the whole request."},
            },
            "required": ["url"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["status", "headers", "body", "url"]},
    },
}


async def run(ctx, args):
    response = await asyncio.to_thread(
        fetch, args.get("method", "GET"), args["url"], headers=args.get("headers"), body=args.get("body"),
        timeout=float(args.get("timeout", 60)),
    )
    return {"status": response.status, "headers": response.headers, "body": response.text, "url": response.url}
