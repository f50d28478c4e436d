"""event-subscribe: add a queue (for event-wait) or a handler skill to a topic; idempotent."""

from agentapps import DeniedError, UsageError
from agentapps.runtime import EventBus, events_for
from agentapps.skill import ref_kind, refuse_options

frontmatter = {
    "name": "event-subscribe",
    "description": (
        "Subscribe to a topic. Without `ref`, create the queue `queue` (a consumer group, default "
        "'default') so events are kept for event-wait even while nobody waits; every queue gets "
        "every event, and waiters sharing one queue split them. With `ref`, invoke that skill with "
        "{event, ...args} for each event. `replay` first delivers buffered past events (the last 100, "
        "or the last N; on redis: the stream's past events). Subscribing something that exists "
        "already changes nothing. On redis, handlers run in `agentapps worker`."
    ),
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "The topic to subscribe to."},
                "ref": {"type": "string", "minLength": 1,
                        "description": "A skill to invoke for each event, with args {event, ...args}."},
                "args": {"type": "object", "description": "Extra args for the `ref` skill."},
                "queue": {"type": "string", "minLength": 1, "maxLength": 200, "default": "default",
                          "description": "Consumer group name (without `ref`)."},
                "replay": {"type": ["boolean", "integer"], "minimum": 0, "default": False,
                           "description": "true: deliver the buffered recent events first; a number: "
                                          "only that many of the latest."},
                "store": {"type": "string", "enum": ["memory", "redis"],
                          "description": "Backend: 'memory' (this process) or 'redis' (Redis Streams, "
                                         "shared by every process using AGENTAPPS_REDIS_URL). Default: "
                                         "the project's `stores:` choice, else 'memory'."},
            },
            "required": ["topic"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"created": {"type": "boolean"}}},
        "tags": ["runtime", "events"],
        "action-args": ["ref"],
    },
}


def policy_view(ctx, args):
    """`ref` as the handler it names: a bare name as is, a path as its file's real `file://` URI
    (so `ref=rec*` cannot admit `rec/../other.skill.py`)."""
    ref = args.get("ref")
    if not isinstance(ref, str) or ref_kind(ref) == "name" or not (ref_kind(ref) == "path" or ref.startswith("file:")):
        return args
    return {**args, "ref": ctx.globals.lookup.resolve(ref).uri or ref}


def run(ctx, args):
    ref = args.get("ref")
    refuse_options(args.get("args"), "A handler's args")  # data for the handler, never invoke options
    if ref is not None:
        parent = ctx.envelope.parent
        if parent is not None and parent.envelope.untrusted and ref_kind(ref) != "name":
            raise DeniedError(f"Agent code may only subscribe skills by bare name; '{ref[:80]}' is not one.")
        # Fail now, not at every event, if the handler is unknown. Which handlers a caller may
        # subscribe is an argument constraint on its own pattern (`event-subscribe(ref=my-*)`);
        # each event runs the handler through the full pipeline, under its own allowed-tools.
        ctx.globals.lookup.resolve(ref)
    bus = events_for(ctx.globals, args.get("store"))
    if isinstance(bus, EventBus):
        created = bus.subscribe(args["topic"], queue=args.get("queue"), ref=ref, args=args.get("args"),
                                ctx=ctx, replay=args.get("replay", False))
    elif ref is not None:
        raise UsageError(
            f"A handler for the redis topic '{args['topic']}' runs in a worker process: "
            f"agentapps worker {args['topic']} --group NAME --handler {ref}")
    else:
        created = bus.subscribe(args["topic"], queue=args.get("queue"), replay=args.get("replay", False))
    what = {"ref": ref} if ref is not None else {"queue": args.get("queue", "default")}
    return {"topic": args["topic"], **what, "created": created}
