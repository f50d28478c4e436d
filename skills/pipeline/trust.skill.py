"""trust: a call that a trust rule matches needs a human's approval (or --approve).

Rules come from every calling skill up the tree (its cascaded `metadata.trust`) and from the
project's main skill, read from the main skill itself: a skill cannot remove project-wide rules
with `trust: false`, `rules: ""` or `$inherit: false`.
"""

import os
import sys

from agentapps import ConfigError
from agentapps.pipeline import candidate, decide, needs_approval, policy_args, rules_of
from agentapps.skill import blocking

frontmatter = {
    "name": "trust",
    "description": "Middleware: ask for approval before a call that matches a caller's or the project's trust rules.",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


def _rules(tool, meta):
    try:
        return tool.name, rules_of(meta, tool.name)
    except ConfigError as exc:  # point at the file that declares the malformed rule
        exc.file = exc.file or (str(tool.path) if tool.path else None)
        raise


def _rule_sets(target):
    ctx = target.envelope.parent
    while ctx is not None:
        if not ctx.run.entry and ctx.envelope.parent is not None:  # skills, not the CLI's root
            yield _rules(ctx.tool, ctx.meta)
        ctx = ctx.envelope.parent
    main = target.globals.config.main_tool
    caller = target.envelope.parent
    # the user's own call at the terminal asks nobody; a skill's call, or a server client's, does
    own = caller is None or (caller.envelope.parent is None and not target.globals.internals.remote_caller)
    if main is not None and not own:
        yield _rules(main, main.metadata)


def _caller_name(target):
    """The skill on whose behalf the call is made (agent code acts for the skill its agent serves)."""
    ctx = target.envelope.parent
    while ctx is not None and (ctx.run.entry or ctx.tool.name in ("agent-code", "agent")):
        ctx = ctx.envelope.parent
    return ctx.tool.name if ctx is not None else "agentapps"


def _maybe_rules(target):
    """Cheap and generous: does any caller up the tree, or the main skill, set `trust` at all?"""
    ctx = target.parent
    while ctx is not None:
        found = ctx.meta.get("trust")
        if found is not None and found is not False:
            return True
        ctx = ctx.parent
    main = target.globals.config.main_tool
    found = None if main is None else main.metadata.get("trust")
    return found is not None and found is not False


def run(ctx, args):
    target = ctx.target
    if not _maybe_rules(target):  # the common case: nobody up the tree has trust rules
        return None
    rule_sets = [(owner, rules) for owner, rules in _rule_sets(target) if rules]
    if not rule_sets:  # the common case: nobody up the tree has trust rules
        return None
    return _ask(ctx, target, rule_sets)


async def _ask(ctx, target, rule_sets):
    who = candidate(target)
    view = policy_args(target)
    found = needs_approval(rule_sets, who, view)
    if found is None:
        return
    _, rule = found
    g = ctx.globals
    approve = list(g.config.overrides.get("approve") or []) + os.environ.get("AGENTAPPS_APPROVE", "").split()
    interactive = sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")
    await blocking(
        decide, caller=_caller_name(target), callee=target.tool.name,
        rule=rule, args=dict(target.args), data_dir=g.config.data_dir, approve=approve,
        interactive=interactive, timeout=float(os.environ.get("AGENTAPPS_TRUST_TIMEOUT", "60")),
        candidate=who, view=view, writes_code=_writes_code(target, view),
    )


def _writes_code(target, view):
    """A file-write the file guard counts as writing code: its question never offers "always"."""
    from agentapps.io import is_protected

    path = view.get("path")
    return target.tool.name == "file-write" and isinstance(path, str) and is_protected(path, target)
