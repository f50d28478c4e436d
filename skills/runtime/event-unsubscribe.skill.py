"""event-unsubscribe: remove a handler, a queue, or every subscription of a topic."""

from agentapps.events.bus import bus_for

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
            },
            "required": ["topic"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"removed": {"type": "integer"}}},
        "tags": ["runtime", "events"],
    },
}


def run(ctx, args):
    removed = bus_for(ctx.globals).unsubscribe(args["topic"], ref=args.get("ref"), queue=args.get("queue"))
    return {"removed": removed}
