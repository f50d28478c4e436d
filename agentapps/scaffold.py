"""`agentapps init`: a main skill, an example code skill and `.agent-apps/` with its .gitignore."""

from __future__ import annotations

import re
from pathlib import Path

from agentapps.boot import search_path
from agentapps.errors import ConfigError, SkillLoadError
from agentapps.tools.loader import load_file
from agentapps.tools.lookup import Lookup
from agentapps.tools.names import MAIN_PLACEHOLDER
from agentapps.types import ToolDef

MAIN = """---
name: {name}
description: Main skill of the {name} project; its metadata is the project's configuration.
metadata:
  role: main
  # Configuration here cascades to every skill in this project, e.g.:
  # model: {{ id: us.anthropic.claude-sonnet-4-5-20250929-v1:0, region: us-east-1 }}
---
{placeholder}
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

GITIGNORE = (
    "# Runtime data written by agentapps; skills/ and this file are meant to be committed.\n"
    "# trust.json: approvals were kept there once; agentapps now ignores it (they live in your state folder).\n"
    "# packages/: hub packages, restored from agentapps-lock.json (commit that) by `agentapps install --frozen`.\n"
    "sessions/\nstate/\nruns/\ncheckpoints/\ncache/\npackages/\ntrust.json\ntrust.log\n"
)


def project_name(directory: Path) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", directory.name.lower()).strip("-")[:64]
    return name or "main"


def init_project(directory: Path) -> list[tuple[str, str]]:
    """Create what is missing; never overwrite. Returns (created|kept|skipped, path and why) rows."""
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"Cannot initialise {directory}: it is a file, not a folder.")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"Cannot initialise {directory}: {exc.strerror or exc}.") from None
    mains = _main_skills(directory)
    rows: list[tuple[str, str]] = [("kept", str(m.path)) for m in mains]
    name = project_name(directory)
    main_file = directory / f"{name}.skill.md"
    if not mains and main_file.exists():
        rows.append(("skipped", f"{main_file} (exists, not a main skill; no main skill created)"))
    elif not mains:
        rows.append(_create(main_file, MAIN.format(name=name, placeholder=MAIN_PLACEHOLDER)))
    rows.append(_create(directory / ".agent-apps" / ".gitignore", GITIGNORE))
    greet = directory / "skills" / "greet.skill.py"
    # A second `greet` in the project would make `agentapps run greet` ambiguous (or shadowed).
    other = [p for p in _skill_files("greet", directory, mains[0] if mains else None) if p != greet]
    if other and not greet.exists():
        rows.append(("skipped", f"{greet} (the project already has a skill named 'greet': {other[0]})"))
    else:
        rows.append(_create(greet, GREET))
    (directory / ".agent-apps" / "skills").mkdir(parents=True, exist_ok=True)
    return rows


def _create(path: Path, text: str) -> tuple[str, str]:
    if path.exists():
        return "kept", str(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as handle:  # "x": never replace a file made meanwhile
        handle.write(text)
    return "created", str(path)


def _main_skills(directory: Path) -> list[ToolDef]:
    """The `role: main` skills directly in `directory`, as bootstrap would find them."""
    found = []
    for path in sorted([*directory.glob("*.skill.md"), *directory.glob("SKILL.md")]):
        try:
            tool = load_file(path, root=directory, root_kind="project")
        except SkillLoadError:
            continue
        if tool.is_main:
            found.append(tool)
    return found


def _skill_files(name: str, directory: Path, main: ToolDef | None) -> list[Path]:
    """Files defining skill `name` in the project at `directory` (its own roots, not user or bundled)."""
    found: list[Path] = []
    for root in search_path(directory, directory, main):
        if root.kind not in ("project", "project-skills"):
            continue
        try:
            found += [item.path for item in Lookup([root]).candidates(name) if item.path is not None]
        except SkillLoadError as exc:  # already two in one folder tree: naming one is enough
            found.append(Path(exc.file) if exc.file else root.directory)
    return found
