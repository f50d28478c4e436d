"""What the compiling agent is told: the source skill (prompt, frontmatter, test cases), the shape
of a code skill, and, after a failed attempt, the code it wrote and why it failed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

CODE_RETURNS: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The Python module, without `frontmatter`."}},
    "required": ["code"],
    "additionalProperties": False,
}

TASK = """You turn a markdown skill (a prompt an AI agent runs) into an equivalent Python code skill
for agentapps. The code must give the same results for the same arguments, and it must pass the
skill's test cases (below), which are run against it.

Write a Python module that defines `async def run(ctx, args)` (or a plain `def run`). Its return
value is the skill's result. `args` are the validated arguments (the same `params` as the source).
Call other skills with `await ctx.manager.invoke("name", {...})`; the source's `allowed-tools`
bind these calls. Choose the simplest that works:
- pure code, when the task is mechanical;
- code that calls the `agent` skill only where judgement is needed:
  `await ctx.manager.invoke("agent", {"prompt": "...", "args": {...}, "returns": {...JSON Schema...},
  "allowedTools": "file-read"})` returns the agent's (validated) result;
- a thin wrapper that hands the whole prompt to the `agent` skill that way.
Do not define `frontmatter` (the toolchain writes it from the source) and do not use
`from __future__` imports. Use only the standard library and `agentapps.skill`.

Answer by calling ctx.manager.finish({code: "<the whole module>"})."""


def compile_prompt(name: str, frontmatter: dict[str, Any], body: str, tests: str) -> str:
    return (f"{TASK}\n\n## The skill `{name}`\n\nFrontmatter (JSON):\n```json\n"
            f"{json.dumps(frontmatter, indent=2, ensure_ascii=False)}\n```\n\nPrompt:\n```markdown\n"
            f"{body.strip()}\n```\n\nTest cases (YAML):\n```yaml\n{tests.strip()}\n```")


def attempt_message(attempt: int, limit: int, previous: str | None, failures: Sequence[str]) -> str:
    """The user message of an attempt: the first asks for the code; later ones show what failed."""
    if previous is None:
        return f"Write the code skill for this markdown skill (attempt {attempt} of {limit})."
    lines = "\n".join(f"- {f}" for f in failures)
    return (f"Attempt {attempt} of {limit}. Your previous code failed:\n{lines}\n\nThe code was:\n```python\n"
            f"{previous.strip()}\n```\nFix it and answer with the whole module again.")
