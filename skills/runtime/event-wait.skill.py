"""event-wait: take the queued events of a topic, or wait for the next one."""

from agentapps.events.bus import bus_for

frontmatter = {
    "name": "event-wait",
    "description": (
        "Return a list of events from a topic's queue: everything already queued (up to `max`) at "
        "once, otherwise the next event to arrive, or [] when `timeout` seconds pass. Without a "
        "prior event-subscribe only events emitted during the wait are seen. With ack: false the "
        "events stay pending until event-ack acknowledges or rejects them."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "The topic to wait on."},
                "queue": {"type": "string", "minLength": 1, "maxLength": 200, "default": "default",
                          "description": "Consumer group to take events from."},
                "timeout": {"type": "number", "minimum": 0, "maximum": 86400, "default": 60,
                            "description": "Seconds to wait when nothing is queued (0: do not wait)."},
                "ack": {"type": "boolean", "default": True,
                        "description": "false: keep the events pending until event-ack settles them."},
                "max": {"type": "integer", "minimum": 1, "description": "At most this many events."},
            },
            "required": ["topic"],
            "additionalProperties": False,
        },
        "returns": {"type": "array", "items": {"type": "object"}},
        "tags": ["runtime", "events"],
    },
}


async def run(ctx, args):
    return await bus_for(ctx.globals).wait(
        args["topic"], args.get("queue"), timeout=float(args.get("timeout", 60)),
        ack=args.get("ack", True), limit=args.get("max"),
    )
