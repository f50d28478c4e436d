"""event-emit: publish an event on a topic of the in-process event bus."""

from agentapps.io import traceparent
from agentapps.runtime import events_for

frontmatter = {
    "name": "event-emit",
    "description": (
        "Publish an event on a topic. Every subscribed queue receives it at once, in emission order; "
        "handlers subscribed with a ref are then invoked in the background. Returns the event "
        "{id, topic, type, source, data, timestamp, rootContextId} (and traceparent, when traces are on)."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "The topic to publish on, e.g. 'build-progress'."},
                "type": {"type": "string", "minLength": 1, "maxLength": 200, "default": "event",
                         "description": "What kind of event this is, e.g. 'started' or 'done'."},
                "data": {"description": "The payload: any JSON value."},
                "store": {"type": "string", "enum": ["memory", "redis"],
                          "description": "Backend: 'memory' (this process) or 'redis' (Redis Streams, "
                                         "shared by every process using AGENTAPPS_REDIS_URL). Default: "
                                         "the project's `stores:` choice, else 'memory'."},
            },
            "required": ["topic"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "required": ["id", "topic", "type", "timestamp"]},
        "tags": ["runtime", "events"],
    },
}


def run(ctx, args):
    caller = ctx.envelope.parent
    source = caller.tool.name if caller is not None and caller.envelope.parent is not None else None
    return events_for(ctx.globals, args.get("store")).emit(
        args["topic"], args.get("type", "event"), args.get("data"),
        source=source, root_context_id=ctx.nonlocals.get("rootContextId"), depth=_handler_depth(ctx) + 1,
        traceparent=traceparent(ctx),  # traces on: a worker's run of this event joins this call's trace
    )


def _handler_depth(ctx):
    """Depth of the event whose handler (an ancestor invoked with `event`) is emitting; -1 if none."""
    node = ctx.envelope.parent
    while node is not None:
        event = node.args.get("event") if isinstance(node.args, dict) else None
        if isinstance(event, dict) and "topic" in event and isinstance(event.get("depth"), int):
            return event["depth"]
        node = node.envelope.parent
    return -1
