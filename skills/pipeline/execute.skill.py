"""execute: the leaf for code skills — call the served skill's `run(ctx, args)`."""

from agentapps.pipeline import call_tool

frontmatter = {
    "name": "execute",
    "description": "Middleware: run a code skill's function (the execution leaf for .skill.py files).",
    "metadata": {"role": "middleware", "tags": ["pipeline"], "applies-to": ["code", "memory"]},
}


def run(ctx, args):
    target = ctx.target
    if target.tool.kind == "markdown":
        return None  # markdown skills are served by agent-execute
    if ctx.globals.internals.dry_run and target.envelope.depth == 1:  # only the skill the user named
        return {
            "dryRun": True,
            "skill": target.tool.name,
            "path": str(target.tool.path or target.tool.uri),
            "args": dict(target.args),
            "chain": list(target.run.chain.entries),
        }
    return call_tool(target)  # the skill's value, or an awaitable the pipeline awaits
