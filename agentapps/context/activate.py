"""The `$frontmatter` invoke option: activate middleware for one call, the way the seed lets an
agent use middleware skills that declare params.

`invoke(name, {...args, $frontmatter: {audit: {level: 2}}})` adds the middleware `audit` to this
call's chain with `{level: 2}` as its configuration (its metadata key), as if the callee's
metadata said so. It may only ACTIVATE: each key must name a `role: middleware` skill that
declares `params`, must not already be in the callee's metadata (nothing is replaced or switched
off), and its value must be valid for those params. The caller's allowed-tools must admit the
middleware with that configuration as if the caller called it (so `audit(level=1)` in
allowed-tools limits what agent code may ask for). Agent code may pass this option, and no other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.cascade.interface import params_of
from agentapps.errors import ArgsError, DeniedError, SkillNotFoundError
from agentapps.schemas.validation import MAX_STRING, check_limits, validate
from agentapps.tools.policy import Candidate, check_chain

if TYPE_CHECKING:
    from agentapps.context.context import Context


def activate(ctx: Context, frontmatter: Any) -> None:
    """Lay a `$frontmatter` option over a prepared context: new metadata keys, a new chain."""
    if frontmatter is None:
        return
    tool = ctx.tool
    if not isinstance(frontmatter, dict) or not frontmatter:
        raise ArgsError(f"$frontmatter for '{tool.name}' must be an object naming middleware to "
                        "activate, e.g. {\"audit\": {\"level\": 2}}.", skill=tool.name)
    if ctx.chain.static:
        raise DeniedError(f"'{tool.name}' runs without a middleware chain; $frontmatter cannot "
                          "activate middleware around it.", skill=tool.name)
    g = ctx.globals
    meta = dict(ctx.meta)
    for name, config in frontmatter.items():
        if not isinstance(name, str) or name.startswith("$") or name in meta or name in tool.metadata:
            raise DeniedError(f"$frontmatter may only activate middleware; '{name}' is already part "
                              f"of the metadata of '{tool.name}' and is never replaced.", skill=tool.name)
        try:
            middleware = g.lookup.find(name)
        except SkillNotFoundError:
            raise ArgsError(f"$frontmatter names '{name}', but there is no such skill.", skill=tool.name) from None
        params = params_of(middleware, g.lookup) if middleware.metadata.get("role") == "middleware" else None
        if not params:
            raise DeniedError(f"$frontmatter may only activate middleware skills that declare params; "
                              f"'{name}' is not one.", skill=tool.name)
        check_limits(config, skill=name, max_string=MAX_STRING)
        validate(config, params, g.cache_for("schema"), skill=name, where="params")
        check_chain(ctx.caller_policies, Candidate(middleware.name, middleware.tags, middleware.hidden),
                    config if isinstance(config, dict) else {})
        meta[name] = config
    from agentapps.context.plan import chain_plan

    ctx.meta = meta
    ctx.chain = chain_plan(tool, meta, g)
