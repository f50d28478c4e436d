"""The task of a folder skill: an Agent Skill (`NAME/SKILL.md`) that declares no `params` takes
one optional string, `task`, which its agent gets as the user's request (the first user message).

Agent Skills have no parameters: the user says what they want and the skill says how to do it.
So the loader gives such a skill an implicit `params` schema with only `task`, and everything
that reads a skill's params sees it: `run` (the text after the skill's name, `--input`, `--task`
or piped stdin), `repl --task`, `serve` (`args.task`), `mcp-server` (a `task` argument),
validation, `describe` and `run NAME --help`. A folder skill that declares `params`, inherits
(`$inherit`) or has a role other than `context` (the default of a folder skill: `main`,
`middleware`...) gets nothing added.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentapps.tools.names import FOLDER_SKILL_FILE
from agentapps.types import ToolDef

TASK = "task"
DESCRIPTION = "What to do, in the user's own words: the agent gets it as the user's request."


def task_params() -> dict[str, Any]:
    """The implicit params schema (a new object each time: a loaded skill's metadata is its own)."""
    return {"type": "object", "properties": {TASK: {"type": "string", "description": DESCRIPTION}},
            "additionalProperties": False}


def add_implicit_task(metadata: dict[str, Any]) -> None:
    """Give a folder skill's metadata the implicit `task` param, unless it has params of its own,
    inherits them, or is not a plain folder skill (its role is set to something else)."""
    if "params" in metadata or "$inherit" in metadata or metadata.get("role", "context") != "context":
        return
    metadata["params"] = task_params()


def takes_task(tool: ToolDef, params: Mapping[str, Any] | None) -> bool:
    """Whether `tool` is a folder skill whose params are the implicit task (so its task is the request)."""
    return (tool.kind == "markdown" and tool.path is not None and tool.path.name == FOLDER_SKILL_FILE
            and params == task_params())


def request_of(tool: ToolDef, args: Mapping[str, Any] | None) -> str | None:
    """The user's request for a folder skill's agent: its `task`, when it takes one and got one."""
    text = (args or {}).get(TASK)
    if not isinstance(text, str) or not text.strip():
        return None
    return text if takes_task(tool, tool.metadata.get("params")) else None
