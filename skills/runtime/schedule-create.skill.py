"""schedule-create: run a skill on a cron schedule from now on, kept in the project's state store
(`agentapps serve` runs it, once per due time across replicas)."""

from agentapps import ArgsError
from agentapps.pipeline import validate
from agentapps.runtime import create_schedule, store_for
from agentapps.skill import params_of

frontmatter = {
    "name": "schedule-create",
    "description": "Run a skill on a cron schedule (UTC) from now on, kept in the project's state store and "
                   "run by 'agentapps serve'. Returns {ok, schedule, next}.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "skill": {"type": "string", "minLength": 1, "maxLength": 256, "description": "The skill to run."},
                "cron": {"type": "string", "minLength": 1, "maxLength": 200,
                         "description": "Five cron fields (minute hour day month weekday, UTC), e.g. '0 9 * * mon-fri'; "
                                        "six with seconds first."},
                "args": {"type": "object", "description": "The skill's args at every run (checked now)."},
                "catchUp": {"type": "string", "enum": ["skip", "once", "each"],
                            "description": "Times that passed while no server ran: skip them (default), run once "
                                           "for all of them, or run each (at most 100)."},
                "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$",
                       "description": "A name for the schedule (default: generated)."},
                "store": {"type": "string", "enum": ["file", "memory", "redis"],
                          "description": "Backend: the project's `stores:` choice by default. 'redis' shares the "
                                         "schedules with every server of the project."},
            },
            "required": ["skill", "cron"],
            "additionalProperties": False,
        },
        # lasting effects: an agent gets it only when its allowed-tools name it, never through `*`
        "visibility": "hidden",
        "tags": ["runtime", "schedule"],
    },
}


def run(ctx, args):
    import datetime as dt

    tool = ctx.globals.lookup.find(args["skill"])  # an unknown skill: the error names close ones
    params = params_of(tool, ctx.globals.lookup, ctx.globals.config.main_tool)  # own, else through $inherit
    given = dict(args.get("args") or {})
    if isinstance(params, dict):  # refused now, not at 3 a.m.
        validate(given, params, ctx.globals.cache_for("schema"), skill=tool.name, where="params", error_cls=ArgsError)
    made = create_schedule(store_for(ctx.globals, args.get("store")), tool.name, args["cron"], args=given,
                           catch_up=args.get("catchUp", "skip"), schedule_id=args.get("id"))
    due = made.next_due(made.created)
    return {"ok": True, "schedule": made.to_dict(),
            "next": None if due is None else dt.datetime.fromtimestamp(due, dt.UTC).isoformat()}
