"""todo-report: collect TODO/FIXME comments in code, have a sub-agent rank them, print a markdown report.

The deterministic part (finding the comments) is plain Python; only the judgement (how much each
one matters) goes to a model. The sub-agent may only read files: the skill's own `allowed-tools`
says so with `agent(allowedTools=file-read)`, so even a changed prompt cannot widen it, and the
`returns` schema makes its answer a list the code can rely on.
"""

import re

frontmatter = {
    "name": "todo-report",
    "description": "Find TODO/FIXME comments in the project and rank them with an agent that may only read files.",
    "allowed-tools": "file-list file-read agent(allowedTools=file-read)",
    "metadata": {
        "tags": ["example", "maintenance"],
        "params": {
            "type": "object",
            "properties": {
                "glob": {"type": "string", "description": "Files to scan, relative to the project root (default **/*.py)."},
                "max": {"type": "integer", "minimum": 1, "maximum": 200,
                        "description": "Rank at most this many comments (default 50)."},
            },
            "additionalProperties": False,
        },
        "returns": {"type": "string"},
    },
}

MARKER = re.compile(r"#\s*(?P<tag>TODO|FIXME|XXX)\b(?:\((?P<who>[^)]*)\))?:?\s*(?P<text>.*)")
PRIORITIES = ("high", "medium", "low")

# What the sub-agent must return; the agent keeps asking the model until it matches.
RANKED = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "priority": {"enum": list(PRIORITIES)},
                    "reason": {"type": "string", "description": "Why, in one short sentence."},
                },
                "required": ["id", "priority", "reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["items"],
    "additionalProperties": False,
}

PROMPT = """\
Rank the TODO and FIXME comments listed in `memory.args.todos` (id, file, line, tag, text) by how
much it matters to fix them soon: `high` for wrong results, lost money or data, crashes users hit;
`medium` for reliability and user-visible annoyances; `low` for cleanups. Read the code around a
comment with `file-read` (use `offset` and `limit`) when the comment alone does not tell. Return
one item per id, each with a one-sentence reason a reviewer can check.
"""


def find_todos(path, text):
    for number, line in enumerate(text.splitlines(), 1):
        found = MARKER.search(line)
        if found:
            tag = found["tag"] + (f"({found['who']})" if found["who"] else "")
            yield {"file": path, "line": number, "tag": tag, "text": found["text"].strip()}


def render(todos, ranked):
    by_id = {item["id"]: item for item in ranked}
    files = len({t["file"] for t in todos})
    lines = [f"# Ranked TODO and FIXME comments: {len(todos)} in {files} files"]
    for priority in PRIORITIES:
        chosen = [t for t in todos if by_id.get(t["id"], {}).get("priority") == priority]
        if chosen:
            lines += ["", f"## {priority.capitalize()}", ""]
            lines += [f"- {t['file']}:{t['line']} {t['tag']}: {t['text']}\n  {by_id[t['id']]['reason']}"
                      for t in chosen]
    unranked = [t for t in todos if t["id"] not in by_id]
    if unranked:
        lines += ["", "## Not ranked", ""] + [f"- {t['file']}:{t['line']} {t['tag']}: {t['text']}"
                                               for t in unranked]
    return "\n".join(lines)


async def run(ctx, args):
    todos = []
    for path in await ctx.manager.invoke("file-list", {"glob": args.get("glob", "**/*.py")}):
        todos += find_todos(path, await ctx.manager.invoke("file-read", {"path": path}))
    if not todos:
        return "No TODO or FIXME comments found."
    todos = [{"id": n, **t} for n, t in enumerate(todos[: args.get("max", 50)], 1)]
    ranked = await ctx.manager.invoke("agent", {
        "prompt": PROMPT,
        "allowedTools": "file-read",  # narrower than this skill's own: no file-list
        "returns": RANKED,
        "args": {"todos": todos},
        "skillName": "todo-report",
        "name": "todo-ranker",
        # the cascaded `model` (e.g. from the project's main skill): id, region, limits
        "config": dict(ctx.meta.get("model") or {}),
    })
    return render(todos, ranked["items"])
