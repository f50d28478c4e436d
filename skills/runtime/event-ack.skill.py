"""event-ack: settle events that event-wait delivered with ack: false."""

from agentapps.events.bus import bus_for

frontmatter = {
    "name": "event-ack",
    "description": (
        "Acknowledge events delivered by event-wait with ack: false, so they are done; or, with "
        "reject: true, put them back at the front of the queue to be delivered again."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "The topic the events came from."},
                "queue": {"type": "string", "minLength": 1, "maxLength": 200, "default": "default",
                          "description": "The consumer group they were taken from."},
                "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                        "description": "The ids of the events to settle."},
                "reject": {"type": "boolean", "default": False,
                           "description": "true: requeue the events instead of acknowledging them."},
            },
            "required": ["topic", "ids"],
            "additionalProperties": False,
        },
        "returns": {"type": "object"},
        "tags": ["runtime", "events"],
    },
}


def run(ctx, args):
    reject = bool(args.get("reject", False))
    ids = bus_for(ctx.globals).ack(args["topic"], args.get("queue"), args["ids"], reject=reject)
    return {"requeued" if reject else "acked": ids}
