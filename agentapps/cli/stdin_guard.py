"""Piped stdin that `agentapps run` would otherwise drop: refused before the run, never lost quietly.

Piped stdin fills a skill's `input` param (cli.inputs) or is read by `--args-file -`. Anything else
piped to a skill that has no use for it is a mistake to say out loud (exit 2), not to swallow:

- a code skill without an `input` param;
- a markdown skill that declares `params` without `input`;
- `--input TEXT` given while stdin holds data too (one of the two would be dropped).

Left alone: folder skills (`SKILL.md`) and markdown skills without params (stdin is their task),
persistent agents (`model.persistent: true`, on the skill or its project's main skill: they read stdin
lines between turns), and skills tagged `gateway` (they read stdin lines themselves, through
`gateway-receive`). Only stdin that already holds data when the run starts counts: an empty pipe,
`/dev/null`, a terminal, or a pipe nothing was written to yet is never waited for or refused.
"""

from __future__ import annotations

import sys
from typing import Any

from agentapps.cli.skillargs import kebab, property_for
from agentapps.errors import ArgsError
from agentapps.tools.names import FOLDER_SKILL_FILE
from agentapps.types import ToolDef


def refuse_unused_stdin(tool: ToolDef, main: ToolDef | None, params: dict[str, Any] | None,
                        args: dict[str, Any], used_stdin: bool) -> None:
    """ArgsError when stdin holds data this run would never read; else nothing (nothing is read)."""
    if used_stdin or not _could_drop(tool, main, params):
        return
    props = (params or {}).get("properties") or {}
    key = property_for("input", props)
    if key is not None and key not in args:
        return  # cli.inputs reads it into `input`
    if not _holds_data():
        return
    if key is not None:
        raise ArgsError(f"Skill '{tool.name}' got --{kebab(key)} and piped stdin; give the input one way "
                        "(stdin fills --input when the flag is absent).", skill=tool.name)
    names = ", ".join("--" + kebab(p) for p in props) or "none"
    raise ArgsError(f"Skill '{tool.name}' has no `input` param, so piped stdin would be dropped (its params: "
                    f"{names}); pass the text as a param (--name \"$(cat file)\") or don't pipe.",
                    skill=tool.name)


def _could_drop(tool: ToolDef, main: ToolDef | None, params: dict[str, Any] | None) -> bool:
    if tool.path is not None and tool.path.name == FOLDER_SKILL_FILE:
        return False
    if "gateway" in tool.tags:
        return False
    if tool.kind == "code":
        return True
    if tool.kind != "markdown" or params is None:
        return False
    return not any(_persistent(t) for t in (tool, main) if t is not None)


def _persistent(tool: ToolDef) -> bool:
    model = tool.metadata.get("model")
    return isinstance(model, dict) and model.get("persistent") is True


def _holds_data() -> bool:
    """Whether stdin is not a terminal and one byte is ready without waiting (that byte is read:
    the caller refuses the run, so nothing else reads stdin)."""
    import os
    import select

    try:
        if sys.stdin is None or sys.stdin.isatty():
            return False
        fd = sys.stdin.fileno()
        ready, _, _ = select.select([fd], [], [], 0)
        return bool(ready) and os.read(fd, 1) != b""
    except (OSError, ValueError):  # closed, or not a real file (an embedding caller's stream)
        return False
