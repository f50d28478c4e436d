"""validate-args: check the served skill's args against its `params` JSON Schema (2020-12)."""

from agentapps import ArgsError
from agentapps.pipeline import interface, refused_config, validate

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
            names = ", ".join(sorted(target.args))
            raise ArgsError(
                f"Skill '{tool.name}' takes no arguments (it declares no `params`), but got: {names}.",
                skill=tool.name,
                file=tool.path,
            )
        return
    try:
        validate(target.args, params, ctx.globals.cache_for("schema"), skill=tool.name, where="params",
                 file=tool.path)
    except ArgsError as exc:
        owner = target.envelope.target
        if owner is not target and owner.meta.get(tool.name) not in (None, False):
            # a middleware's args are the served skill's metadata key of its name: point at that key
            from agentapps.pipeline import written_at

            where = written_at(owner, (tool.name,)) or (owner.tool.path, None)
            raise refused_config(owner.tool.name, tool.name, exc, *where) from None
        raise
    return
