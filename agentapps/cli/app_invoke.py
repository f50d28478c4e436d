"""Run one of the bundled discovery skills for a command (list, describe, which, check), without an
event loop if it needs none."""

from __future__ import annotations

import sys
from typing import Any


def invoke_command_skill(skill: str, args: dict[str, Any]) -> tuple[Any, Any]:
    from agentapps.boot import bootstrap
    from agentapps.cli.progress import Progress
    from agentapps.cli.supervise import finish_driven
    from agentapps.context.manager import invoke_root
    from agentapps.core.driver import drive

    root = bootstrap()
    g = root.globals
    g.internals.reporter = Progress(sys.stderr)  # e.g. "starting MCP server 'x' to list its tools"
    try:
        return drive(invoke_root(root, skill, args)), root
    finally:
        finish_driven(g)  # servers a listing started (MCP) stop here
