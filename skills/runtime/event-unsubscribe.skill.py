"""event-unsubscribe: remove a handler, a queue, or every subscription of a topic."""

from agentapps.runtime import EventBus, events_for

frontmatter = {
    "name": "event-unsubscribe",
    "description": (
        "Unsubscribe from a topic: with `ref`, remove that handler; with `queue`, remove that queue "
        "(its undelivered events are dropped); with neither, remove every handler and queue of the "
        "topic. Returns {removed: count}."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "The topic to unsubscribe from."},
                "ref": {"type": "string", "minLength": 1, "description": "The handler skill to remove."},
                "queue": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "The queue (consumer group) to remove."},
                "store": {"type": "string", "enum": ["memory", "redis"],
                          "description": "Backend: 'memory' (this process) or 'redis' (Redis Streams, "
                                         "shared by every process using AGENTAPPS_REDIS_URL). Default: "
                                         "the project's `stores:` choice, else 'memory'."},
            },
            "required": ["topic"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"removed": {"type": "integer"}}},
        "tags": ["runtime", "events"],
    },
}


def run(ctx, args):
    bus = events_for(ctx.globals, args.get("store"))
    if isinstance(bus, EventBus):
        removed = bus.unsubscribe(args["topic"], ref=args.get("ref"), queue=args.get("queue"))
    elif args.get("ref") is not None:
        removed = 0  # a redis topic has no in-process handlers
    else:
        removed = bus.unsubscribe(args["topic"], queue=args.get("queue"))
    return {"removed": removed}
