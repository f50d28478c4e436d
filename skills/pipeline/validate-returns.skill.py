"""validate-returns: after execution, check the result against the served skill's `returns` schema."""

from agentapps import ReturnsError
from agentapps.pipeline import interface, validate

frontmatter = {
    "name": "validate-returns",
    "description": "Middleware: validate a skill's result against its `returns` JSON Schema.",
    # it joins only the chains of skills that declare `returns` (own or through $inherit)
    "metadata": {"role": "middleware", "tags": ["pipeline"], "applies-if": "returns"},
}


def run(ctx, args):
    target = ctx.target
    if ctx.globals.internals.dry_run:
        return None
    schema = interface(target, "returns")
    if not isinstance(schema, dict):
        return None  # nothing to check: the chain goes on without this entry around it
    return _after(ctx, target, schema)


async def _after(ctx, target, schema):
    await ctx.manager.next()
    validate(
        target.locals.result, schema, ctx.globals.cache_for("schema"),
        skill=target.tool.name, where="returns", error_cls=ReturnsError, file=target.tool.path,
    )
