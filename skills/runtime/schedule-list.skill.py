"""schedule-list: the schedules schedule-create made, with each one's next run."""

from agentapps.runtime import list_schedules, store_for

frontmatter = {
    "name": "schedule-list",
    "description": "List the schedules made with schedule-create, with each one's next run (UTC). Returns {schedules}.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "store": {"type": "string", "enum": ["file", "memory", "redis"],
                          "description": "Backend: the project's `stores:` choice by default. 'redis' shares the "
                                         "schedules with every server of the project."},
            },
            "additionalProperties": False,
        },
        "tags": ["runtime", "schedule"],
    },
}


def run(ctx, args):
    import datetime as dt
    import time

    now, out = time.time(), []
    for each in list_schedules(store_for(ctx.globals, args.get("store"))):
        due = each.next_due(now)
        out.append({**each.to_dict(), "next": None if due is None else dt.datetime.fromtimestamp(due, dt.UTC).isoformat()})
    return {"schedules": out}
