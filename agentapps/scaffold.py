"""`agentapps init`: a main skill, an example code skill and `.agent-apps/` with its .gitignore."""

from __future__ import annotations

import re
from pathlib import Path

from agentapps.errors import ConfigError

MAIN = """---
name: {name}
description: Main skill of the {name} project; its metadata is the project's configuration.
metadata:
  role: main
  # Configuration here cascades to every skill in this project, e.g.:
  # model: {{ id: us.anthropic.claude-sonnet-4-5-20250929-v1:0, region: us-east-1 }}
---
Describe what this project's agent should do when run without naming a skill.
"""

GREET = '''"""greet: an example code skill created by `agentapps init`."""

frontmatter = {
    "name": "greet",
    "description": "Greet someone, a given number of times.",
    "metadata": {
        "params": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Who to greet."},
                "times": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    },
}


def run(ctx, args):
    return "\\n".join(f"Hello, {args['name']}!" for _ in range(args.get("times", 1)))
'''

GITIGNORE = "# Runtime data written by agentapps; skills/ and this file are meant to be committed.\nsessions/\nstate/\nruns/\ncache/\n"


def project_name(directory: Path) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", directory.name.lower()).strip("-")[:64]
    return name or "main"


def init_project(directory: Path) -> list[tuple[str, Path]]:
    """Create what is missing; never overwrite. Returns (created|kept, path) rows."""
    if not directory.is_dir():
        raise ConfigError(f"Cannot initialise {directory}: it is not a folder.")
    existing_main = [p for p in directory.glob("*.skill.md") if "role: main" in p.read_text(errors="replace")]
    name = project_name(directory)
    files: list[tuple[Path, str]] = [
        (directory / ".agent-apps" / ".gitignore", GITIGNORE),
        (directory / "skills" / "greet.skill.py", GREET),
    ]
    if not existing_main:
        files.insert(0, (directory / f"{name}.skill.md", MAIN.format(name=name)))
    rows: list[tuple[str, Path]] = [("kept", p) for p in existing_main]
    for path, text in files:
        if path.exists():
            rows.append(("kept", path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as handle:  # "x": never replace a file made meanwhile
            handle.write(text)
        rows.append(("created", path))
    (directory / ".agent-apps" / "skills").mkdir(parents=True, exist_ok=True)
    return rows
