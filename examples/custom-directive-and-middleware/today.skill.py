"""today: the directive `:today[FORMAT]{offset=N workdays=true}` puts a date into a prompt.

A custom directive is just a skill with the params `label`, `attrs` and `skill`: the directives
middleware calls the skill named like the directive and inserts what it returns. `FORMAT` is a
strftime format (default `%Y-%m-%d`); `offset` moves that many days (negative: back), counting
only Monday to Friday with `workdays=true`. The date is the local date, or the one in
SOURCE_DATE_EPOCH (seconds since 1970, UTC) when that is set, as reproducible builds do.
"""

import os
from datetime import UTC, date, datetime, timedelta

from agentapps import directive_target
from agentapps.errors import ConfigError

frontmatter = {
    "name": "today",
    "description": "Directive :today[FORMAT]{offset=N workdays=true}: today's date, or a day relative to it.",
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts; agents need not see it
        "params": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "description": "A strftime format, e.g. %A %d %B %Y."},
                "attrs": {"type": "object", "additionalProperties": {"type": "string"},
                          "description": "offset (days, may be negative) and workdays (true|false)."},
                "skill": {"type": "string", "description": "The skill whose prompt is being expanded."},
            },
            "additionalProperties": False,
        },
    },
}


def base_date():
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), tz=UTC).date()
    return date.today()


def shifted(day, offset, workdays):
    if not workdays:
        return day + timedelta(days=offset)
    step = 1 if offset > 0 else -1
    for _ in range(abs(offset)):
        day += timedelta(days=step)
        while day.weekday() >= 5:  # Saturday, Sunday
            day += timedelta(days=step)
    return day


def run(ctx, args):
    served = directive_target(ctx)
    if served is None:
        return None  # not expanding a prompt (a metadata key named `today`): nothing to do
    attrs = args.get("attrs") or {}
    raw = attrs.get("offset", "0").strip()
    if not raw.lstrip("+-").isdigit():
        raise ConfigError(f"Skill '{served.tool.name}': :today[]{{offset=...}} must be a whole number "
                          f"of days, not {raw!r}.", skill=served.tool.name, file=served.tool.path)
    day = shifted(base_date(), int(raw), attrs.get("workdays", "false").lower() == "true")
    return day.strftime(args.get("label", "").strip() or "%Y-%m-%d")
