"""validate-returns: after execution, check the result against the served skill's `returns` schema."""

from agentapps.context.plan import interface
from agentapps.errors import ReturnsError
from agentapps.tools.schema import validate

frontmatter = {
    "name": "validate-returns",
    "description": "Middleware: validate a skill's result against its `returns` JSON Schema.",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


async def run(ctx, args):
    await ctx.manager.next()
    target = ctx.target
    if ctx.globals.internals.dry_run:
        return
    schema = interface(target, "returns")
    if isinstance(schema, dict):
        validate(
            target.locals.result, schema, ctx.globals.cache_for("schema"),
            skill=target.tool.name, where="returns", error_cls=ReturnsError, file=target.tool.path,
        )
