"""Writing skill code is privileged: creating or changing a skill file needs the trust gate's yes."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

from agentapps.core.caller import caller_skill
from agentapps.tools.names import is_skill_file

if TYPE_CHECKING:
    from agentapps.context.context import Context


def is_protected(rel: str) -> bool:
    """Whether the project-relative path names a file the loader would take as a skill: any
    `*.skill.md`, `*.skill.py` or `SKILL.md`, in any folder (main skill and pipeline included)."""
    return is_skill_file(rel.rsplit("/", 1)[-1])


async def approve_code_write(ctx: Context, rel: str, details: dict[str, Any]) -> None:
    """Raise DeniedError unless writing skill file `rel` is approved (`--approve NAME`,
    AGENTAPPS_APPROVE, or a yes on the terminal). A direct call from the command line is the user's
    own action and needs no approval."""
    caller = caller_skill(ctx)
    if caller is None:
        return
    from agentapps.trust import decide

    g = ctx.globals
    approve = list(g.config.overrides.get("approve") or []) + os.environ.get("AGENTAPPS_APPROVE", "").split()
    interactive = sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")
    await asyncio.to_thread(
        decide, caller=caller.tool.name, callee=ctx.tool.name, rule=f"writing skill code: {rel}",
        args={"path": rel, **details}, data_dir=g.config.data_dir, approve=approve, interactive=interactive,
        timeout=float(os.environ.get("AGENTAPPS_TRUST_TIMEOUT", "60")),
    )
