"""schedule-delete: stop a schedule made with schedule-create."""

from agentapps.runtime import delete_schedule, store_for

frontmatter = {
    "name": "schedule-delete",
    "description": "Delete a schedule made with schedule-create; a run already started goes on. Returns {ok, existed}.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The schedule's id."},
                "store": {"type": "string", "enum": ["file", "memory", "redis"],
                          "description": "Backend: the project's `stores:` choice by default. 'redis' shares the "
                                         "schedules with every server of the project."},
            },
            "required": ["id"],
            "additionalProperties": False,
        },
        "returns": {"type": "object", "properties": {"ok": {"const": True}, "existed": {"type": "boolean"}}},
        # lasting effects: an agent gets it only when its allowed-tools name it, never through `*`
        "visibility": "hidden",
        "tags": ["runtime", "schedule"],
    },
}


def run(ctx, args):
    return {"ok": True, "existed": delete_schedule(store_for(ctx.globals, args.get("store")), args["id"])}
