"""Expanding a markdown prompt: the optional Jinja2 template, then each directive served by its skill."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.cascade.interface import params_of
from agentapps.directives.scanner import Directive, parse
from agentapps.directives.template import ENGINES, as_text, render
from agentapps.errors import (
    AgentAppsError,
    ConfigError,
    DeniedError,
    SkillLoadError,
    SkillNotFoundError,
)
from agentapps.tools.names import close_names
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.tools.lookup import Lookup

DIRECTIVE_TAG = "directive"


async def expand_prompt(ctx: Context) -> str:
    """Return the served skill's prompt with its template rendered and its directives expanded.

    `ctx` is the directives middleware's context; `ctx.target` is the markdown skill being served.
    Each `:name[label]{attrs}` is served by `ctx.manager.invoke(name, {"label", "attrs", "skill"})`
    and its result is inserted literally. The names expanded are recorded in
    `ctx.target.locals.prompt.directives` (the session middleware looks for `session-history`).
    After a template, directive lines are those of the rendered text (the same as the file's
    unless `{% %}` blocks add or remove lines).
    """
    target = ctx.target
    tool = target.tool
    prompt = target.locals.prompt
    text: str = prompt.expanded
    first_line: int = prompt.line
    rendered = None
    engine = target.meta.get("template")
    if engine is not None and engine is not False:
        if engine not in ENGINES:
            raise ConfigError(
                f"Skill '{tool.name}' sets `template: {engine}`; the only template engine is "
                f"{', '.join(ENGINES)}.", skill=tool.name, file=tool.path,
            )
        rendered = render(text, dict(target.args), skill=tool.name, file=tool.path, first_line=first_line)
        text = rendered.text
    segments = parse(text, first_line=first_line)
    found = [seg for seg in segments if isinstance(seg, Directive)]
    first_use: dict[str, Directive] = {}
    for directive in found:
        first_use.setdefault(directive.name, directive)
    for directive in first_use.values():  # every name is checked before any directive runs
        check_directive(ctx.globals.lookup, directive, tool)
    out: list[str] = []
    for seg in segments:
        out.append(seg if isinstance(seg, str) else await _serve(ctx, seg, tool))
    prompt.directives = [d.name for d in found]
    expanded = "".join(out)
    return rendered.restore(expanded) if rendered is not None else expanded


def check_directive(lookup: Lookup, first: Directive, tool: ToolDef) -> None:
    name = first.name
    try:
        skill = lookup.find(name)
    except SkillNotFoundError:
        raise SkillLoadError(
            f"Unknown directive ':{name}[...]' in skill '{tool.name}': no skill named '{name}' "
            f"serves it.{_suggest(lookup, name)}",
            skill=tool.name, file=tool.path, line=first.line,
        ) from None
    properties = (params_of(skill, lookup) or {}).get("properties") or {}
    if "label" not in properties:
        raise ConfigError(
            f"Skill '{name}' cannot serve the directive ':{name}[...]' in skill '{tool.name}': a "
            "directive skill declares the params `label`, `attrs` and `skill` (see skills/directives/).",
            skill=tool.name, file=tool.path, line=first.line,
        )


def _suggest(lookup: Lookup, name: str) -> str:
    tools, _ = lookup.list_all()
    directives = [t.name for t in tools if DIRECTIVE_TAG in t.tags]
    close = close_names(name, directives) or close_names(name, [t.name for t in tools])
    if not close:
        return f" Directives available: {', '.join(':' + d for d in directives) or 'none'}."
    return " Did you mean " + " or ".join(f"':{c}'" for c in close) + "?"


async def _serve(ctx: Context, directive: Directive, tool: ToolDef) -> str:
    args: dict[str, Any] = {"label": directive.label, "attrs": dict(directive.attrs), "skill": tool.name}
    try:
        value = await ctx.manager.invoke(directive.name, args)
    except AgentAppsError as exc:
        if exc.file is None and tool.path is not None:  # point at the directive in the prompt
            exc.file, exc.line = str(tool.path), directive.line
        raise
    return as_text(value)


def directive_target(ctx: Context) -> Context | None:
    """The context of the markdown skill whose prompt a directive skill is expanding.

    A directive skill is called by the directives middleware, so `ctx.envelope.parent` is that
    middleware's context and `ctx.envelope.parent.target` is the served skill's context (args,
    cascaded metadata, file). Returns None when the directive skill is itself running as a chain
    entry because a metadata key shares its name (`metadata.env: [...]` names the `env` skill):
    it must then do nothing. Called any other way (directly, or from agent code) it refuses.
    """
    if ctx.entry:
        return None
    parent = ctx.parent
    if parent is None or not parent.entry or parent.target is parent or ctx.untrusted:
        raise DeniedError(
            f"Skill '{ctx.tool.name}' serves the directive :{ctx.tool.name}[...] in prompts; only the "
            "directives middleware calls it.",
            skill=ctx.tool.name,
        )
    return parent.target
