"""trust: calls matching a caller's `metadata.trust.rules` need a human's approval (or --approve)."""

import asyncio
import os
import sys

from agentapps.trust import needs_approval

frontmatter = {
    "name": "trust",
    "description": "Middleware: ask for approval before a call that matches a caller's trust rules.",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


def _callers(target):
    ctx = target.envelope.parent
    while ctx is not None:
        if not ctx.run.entry:
            yield ctx.tool.name, ctx.meta
        ctx = ctx.envelope.parent


async def run(ctx, args):
    target = ctx.target
    found = needs_approval(list(_callers(target)), target.tool.name)
    if found is None:
        return
    caller, rule = found
    from agentapps.trust import decide
    g = ctx.globals
    approve = list(g.config.overrides.get("approve") or []) + os.environ.get("AGENTAPPS_APPROVE", "").split()
    interactive = sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")
    await asyncio.to_thread(
        decide, caller=caller, callee=target.tool.name, rule=rule, args=dict(target.args),
        data_dir=g.config.data_dir, approve=approve, interactive=interactive,
        timeout=float(os.environ.get("AGENTAPPS_TRUST_TIMEOUT", "60")),
    )
    return
