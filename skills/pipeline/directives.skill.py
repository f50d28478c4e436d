"""directives: render a markdown skill's template, then expand its `:name[label]{attrs}` directives."""

frontmatter = {
    "name": "directives",
    "description": (
        "Middleware: expand the text directives (:arg[x], :env[X], :inline[file], ...) in a markdown "
        "skill's prompt, after rendering its Jinja2 template when `metadata.template: jinja2` is set."
    ),
    "metadata": {"role": "middleware", "tags": ["pipeline"], "applies-to": "markdown"},
}


async def run(ctx, args):
    # Directive skills are invoked from this context, so for them `ctx.envelope.parent` is this
    # context and `ctx.envelope.parent.target` the served skill (see directive_target in expand.py).
    target = ctx.target
    prompt = target.locals.get("prompt")
    if target.tool.kind != "markdown" or prompt is None:
        return  # code skills have no prompt
    from agentapps.pipeline import expand_prompt  # lazily: code skills never need it

    prompt.expanded = await expand_prompt(ctx)
    return
