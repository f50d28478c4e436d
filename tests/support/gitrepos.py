"""Local git repositories for the hub tests: made in a temporary folder with the real `git`."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=ENV, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], *, tag: str | None = None, message: str = "change") -> str:
    """Write `files` (relative path: text) into `repo` (made on first use), commit, maybe tag; the commit."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, "init", "-q", "-b", "main")
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    if tag:
        git(repo, "tag", tag)
    return git(repo, "rev-parse", "HEAD")


def code_skill(name: str, result: str) -> str:
    return (f'frontmatter = {{"name": "{name}", "description": "A packaged skill."}}\n\n\n'
            f"def run(ctx, args):\n    return {result!r}\n")


def agent_skill(name: str) -> str:
    return f"---\nname: {name}\ndescription: An Agent Skill from a repository.\n---\nDo the {name} thing.\n"


def skills_repo(repo: Path, result: str = "v1") -> str:
    """A repository laid out like anthropics/skills: skills/NAME/SKILL.md folders (one with code)."""
    return commit(repo, {
        "README.md": "# skills\n",
        "skills/pdf-notes/SKILL.md": agent_skill("pdf-notes"),
        "skills/pdf-notes/scripts/tool.py": "print('helper')\n",
        "skills/stamp/SKILL.md": agent_skill("stamp-guide"),
        "skills/stamp/stamp.skill.py": code_skill("stamp", result),
    })


def index(packages: dict[str, Any]) -> str:
    return json.dumps({"packages": packages}, indent=2)
