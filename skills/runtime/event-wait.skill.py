"""event-wait: take the queued events of a topic, or wait for the next one."""

from agentapps.runtime import events_for

frontmatter = {
    "name": "event-wait",
    "description": (
        "Return a list of events from a topic's queue: everything already queued (up to `max`) at "
        "once, otherwise the next event to arrive, or [] when `timeout` milliseconds pass. Without a "
        "prior event-subscribe only events emitted during the wait are seen. With ack: false it "
        "peeks: the events stay queued for the next wait until a wait takes them or event-ack "
        "consumes them."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "The topic to wait on."},
                "queue": {"type": "string", "minLength": 1, "maxLength": 200, "default": "default",
                          "description": "Consumer group to take events from."},
                "timeout": {"type": "number", "minimum": 0, "maximum": 86_400_000, "default": 60_000,
                            "description": "Milliseconds to wait when nothing is queued (default "
                                           "60000; 0: do not wait)."},
                "ack": {"type": "boolean", "default": True,
                        "description": "false: peek; the events stay queued for the next wait."},
                "max": {"type": "integer", "minimum": 1, "description": "At most this many events."},
                "store": {"type": "string", "enum": ["memory", "redis"],
                          "description": "Backend: 'memory' (this process) or 'redis' (Redis Streams, "
                                         "shared by every process using AGENTAPPS_REDIS_URL). Default: "
                                         "the project's `stores:` choice, else 'memory'."},
            },
            "required": ["topic"],
            "additionalProperties": False,
        },
        "returns": {"type": "array", "items": {"type": "object"}},
        "tags": ["runtime", "events"],
    },
}


async def run(ctx, args):
    return await events_for(ctx.globals, args.get("store")).wait(
        args["topic"], args.get("queue"), timeout=args.get("timeout", 60_000) / 1000,
        ack=args.get("ack", True), limit=args.get("max"),
    )
