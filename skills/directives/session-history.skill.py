"""session-history: `:session-history[]{last=N}` places the session's history where it stands in the prompt."""

from agentapps import ConfigError, directive_target
from agentapps.runtime import history_for, render_history

frontmatter = {
    "name": "session-history",
    "description": (
        "Directive :session-history[]{last=N}: the skill's session history (metadata.session) at this "
        "spot in the prompt; the session middleware then does not prepend it."
    ),
    "metadata": {
        "tags": ["directive"],
        "visibility": "hidden",  # served from prompts only; `agentapps list --all --tag directive`
        "$inherit": "directive-base",  # params {label, attrs, skill}
    },
}


def run(ctx, args):
    served = directive_target(ctx)  # ctx.envelope.parent.target: the skill whose prompt is expanded
    if served is None:
        return None  # running as a chain entry because a metadata key is named `session-history`
    # Directives run before the session middleware, so the history is read from the store here.
    entries = history_for(served) or []
    last = (args.get("attrs") or {}).get("last")
    if last is not None:
        if not last.isdigit():
            raise ConfigError(f"Skill '{served.tool.name}': :session-history[]{{last=...}} must be a number.",
                              skill=served.tool.name)
        entries = entries[-int(last):] if int(last) else []
    return render_history(entries) if entries else ""
