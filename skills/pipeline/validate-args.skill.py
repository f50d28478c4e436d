"""validate-args: check the served skill's args against its `params` JSON Schema (2020-12)."""

from agentapps.context.plan import interface
from agentapps.tools.schema import validate

frontmatter = {
    "name": "validate-args",
    "description": "Middleware: validate a skill's arguments against its `params` JSON Schema.",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


def run(ctx, args):
    target = ctx.target
    tool = target.tool
    params = interface(target, "params")
    if params is None:
        if target.args:
            from agentapps.errors import ArgsError

            names = ", ".join(sorted(target.args))
            raise ArgsError(
                f"Skill '{tool.name}' takes no arguments (it declares no `params`), but got: {names}.",
                skill=tool.name,
                file=tool.path,
            )
        return
    validate(target.args, params, ctx.globals.cache_for("schema"), skill=tool.name, where="params",
             file=tool.path)
    return
