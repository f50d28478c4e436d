"""event-ack: settle events that event-wait delivered with ack: false."""

from agentapps.runtime import events_for

frontmatter = {
    "name": "event-ack",
    "description": (
        "Consume events that event-wait showed with ack: false (a peek), so no later wait returns "
        "them; or, with reject: true, leave them first in line (on redis: deliverable again at once)."
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
                           "description": "true: give the events back instead of consuming them."},
                "store": {"type": "string", "enum": ["memory", "redis"],
                          "description": "Backend: 'memory' (this process) or 'redis' (Redis Streams, "
                                         "shared by every process using AGENTAPPS_REDIS_URL). Default: "
                                         "the project's `stores:` choice, else 'memory'."},
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
    bus = events_for(ctx.globals, args.get("store"))
    ids = bus.ack(args["topic"], args.get("queue"), args["ids"], reject=reject)
    return {"requeued" if reject else "acked": ids}
