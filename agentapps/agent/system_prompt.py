"""The text of the agent's system prompt, composed in plain Python.

It was a Jinja2 template, which made every agent run (and every `--dry-run` of a markdown skill)
import Jinja2: 68-100 ms under `python -X importtime` on 2026-11-27 (2 cores, load 5.6). A shadowed
`agent` skill may still pass its own template file to `run_agent` (agentapps.agent.prompt).

Inputs: `tools` / `middleware` are the dicts of `agentapps.agent.discovery.document`, `context`
is `[{name, description, text}]`, `files` is `{folder, list, shell}` or None, `returns` is JSON
Schema text or None, `max_steps` an int or None, `wraps` the wrapped skill's name in middleware
mode or None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HOW = """\
# How you act

You have exactly one tool, `invoke`. Its input is `code`: the body of an async JavaScript
function, run in a sandbox with no files, network, timers, `require` or `import`. Inside it:

- `await ctx.manager.invoke("skill-name", { ...args })` calls a skill and returns its result
  (JSON). Use bare skill names only. Run independent calls in parallel with `Promise.all`.
  A failed call throws an Error you can catch.
- `ctx.manager.finish(value)` sets the final result of this run (any JSON value).
- `memory` is an object that keeps its contents between your invoke calls.
"""

ARGS = "  `memory.args` holds the arguments shown in the user message: use it instead of copying them.\n"

CONSOLE = "- `console.log(...)` output and the value you `return` come back to you as the tool result.\n"

WRAPS = """
You are running as middleware around a call of the skill `{0}` (`memory.target` holds
its name and args). `await target.manager.next()` runs that call (the rest of its pipeline) and
returns its result; you may call it at most once, and a failure throws an Error you can catch.
If you call it, its result is the result of the call unless you call `ctx.manager.finish(value)`
to replace it; if you never call it, `{0}` does not run and your answer is the result.
"""

RETURNS = """
# Your result

This skill must return a value matching this JSON Schema. Finish by calling
`ctx.manager.finish(value)` with such a value; a plain text answer is not accepted.

```json
{0}
```
"""

PERSISTENT = """
# Your result

This agent runs until it is stopped: keep working on the task; call
`ctx.manager.finish(value)` only when there is nothing left to do.
"""

TEXT_RESULT = """
# Your result

When you are done, answer with your final result as plain text (no tool call), or call
`ctx.manager.finish(value)` to return a JSON value instead.
"""

DISCOVERY = """
Other skills may exist: `skill-list` (with an optional `query`) lists them and `skill-describe`
(with a `name`) shows one's params. Some of them may still be refused when you call them.
"""

REFERENCE = """
# Reference

Instructions and knowledge from the project's context skills; follow them where they apply.
"""

MIDDLEWARE = """
# Middleware you can switch on

These skills run around a call as pipeline steps; do not call them directly. Switch one on for
a single call by adding `$frontmatter` to that call's args, with its configuration (checked
against its params below); it only adds the step, never changes the called skill otherwise:
`await ctx.manager.invoke("skill-name", {{ ...args, $frontmatter: {{ "{0}": {{ ... }} }} }})`
"""


def compose(*, task: str, skill: str, mode: str, tools: Sequence[Mapping[str, Any]],
            middleware: Sequence[Mapping[str, Any]], context: Sequence[Mapping[str, Any]],
            returns: str | None, persistent: bool, max_steps: int | None, has_args: bool,
            files: Mapping[str, Any] | None, wraps: str | None) -> str:
    """The system prompt for one agent run (ends with one newline)."""
    out = [f"You are an agent carrying out the skill `{skill}` for a user of agentapps.\n\n", HOW]
    if has_args:
        out.append(ARGS)
    out.append(CONSOLE)
    if wraps:
        out.append(WRAPS.format(wraps))
    out.append("\nWrite small snippets, look at their results, then continue. Long outputs are shortened.\n")
    if max_steps is not None:
        out.append(f"\nYou may call `invoke` at most {max_steps} times in this run.\n")
    out.append(RETURNS.format(returns) if returns else PERSISTENT if persistent else TEXT_RESULT)
    out.append("\n# Skills you can call\n")
    if tools:
        for tool in tools:
            notes = ([] if tool["accepts_args"] else ["- takes no arguments\n"]) + (
                [f"- returns: `{tool['returns']}`\n"] if tool["returns"] else [])
            out.append(_entry(tool, f"`await ctx.manager.invoke(\"{tool['name']}\", {tool['signature']})`\n", notes))
    else:
        out.append("\nNo skills are available to you in this run.\n")
    if mode == "discovery":
        out.append(DISCOVERY)
    if context:
        out.append(REFERENCE)
        for c in context:
            described = f": {c['description']}" if c["description"] else ""
            out.append(f"\n## {c['name']}{described}\n\n{c['text']}\n")
    if files:
        out.append(_files(files))
    if middleware:
        out.append(MIDDLEWARE.format(middleware[0]["name"]))
        for tool in middleware:
            out.append(_entry(tool, f"Configuration `{tool['signature']}`:\n", []))
    out.append(f"\n# The task\n\n{task}\n")
    return "".join(out).strip() + "\n"


def _entry(tool: Mapping[str, Any], how: str, notes: list[str]) -> str:
    """One skill's section: its heading and description, how to call (or configure) it, its
    params, then `notes` and the constraints of its grant."""
    out = [f"\n## {tool['name']}\n", f"{tool['description']}\n" if tool["description"] else "", how]
    out.extend(_param(p) for p in tool["params"])
    out.extend(notes)
    out.extend(_constraint(c) for c in tool["constraints"])
    return "".join(out)


def _param(p: Mapping[str, Any]) -> str:
    """One param line: `- \\`name\\` (type, required, default D): description`."""
    notes = str(p["type"]) + (", required" if p["required"] else "")
    if p["default"] is not None:
        notes += f", default {p['default']}"
    described = f": {p['description']}" if p["description"] else ""
    return f"- `{p['name']}` ({notes}){described}\n"


def _constraint(alternatives: Sequence[Any]) -> str:
    return "- only allowed as `" + "` or `".join(str(a) for a in alternatives) + "`\n"


def _files(files: Mapping[str, Any]) -> str:
    listed = list(files["list"] or ())
    folder = files["folder"]
    none = "" if listed else " (none yet)"
    out = [f"\n# This skill's files\n\nThis skill's folder `{folder}` holds these files{none}:\n"]
    out.extend(f"- `{f}`\n" for f in listed)
    example = listed[0] if listed else "references/notes.md"
    out.append(f"\nRead one with `await ctx.manager.invoke(\"skill-file\", {{path: \"{example}\"}})`\n"
               "(`path: \".\"` lists them). They are read-only.\n")
    if files["shell"]:
        out.append("Run a script there with the `shell` skill, by its full path (for example\n"
                   f"`python3 {folder}/scripts/name.py`); the command runs in the project root.\n")
    return "".join(out)
