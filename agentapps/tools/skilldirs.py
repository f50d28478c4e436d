"""The skills folders other agents keep (`.agents/skills`, `.claude/skills`, `.github/skills`) as
search-path roots: which folders, in which order, under which source label.

OpenCode, Claude Code and Copilot read Agent Skills (`NAME/SKILL.md`) from these folders, and the
project scan skips every dot-folder, so they are roots of their own:

- the project's: in the project folder and in each folder above it up to the repository root
  (the nearest folder holding `.git`, a folder or a worktree's file), nearest first, and in each
  folder `.agents/skills`, `.claude/skills`, `.github/skills` in that order. With no `.git`
  above the project, only the project folder. The walk never reaches the home folder: what is
  there is the user's.
- the user's: `~/.agents/skills`, then `~/.claude/skills`.

Each is scanned one folder deep (`NAME/SKILL.md`, or a skill file directly in it), as those
tools do. A folder that does not exist costs one failed `stat` when first searched, and is
picked up when it appears (tools.index notes a missing root). The labels are what `which` and
`list` show as a skill's source.
"""

from __future__ import annotations

from pathlib import Path

from agentapps.types import PathEntry, RootKind

PROJECT_FOLDERS: tuple[tuple[str, RootKind], ...] = (
    (".agents/skills", "agents"), (".claude/skills", "claude"), (".github/skills", "github"))
USER_FOLDERS: tuple[tuple[str, RootKind], ...] = ((".agents/skills", "user-agents"), (".claude/skills", "user-claude"))
# the project's own skills folders: configured by its main skill and covered by `check`
PROJECT_FOLDER_KINDS: frozenset[str] = frozenset(kind for _, kind in PROJECT_FOLDERS)
DEPTH = 1  # NAME/SKILL.md


def repository_folders(start: Path, home: Path) -> list[Path]:
    """`start` and the folders above it up to the repository root, nearest first; only `start`
    when no folder up to (not including) `home` or the filesystem root holds `.git`."""
    folders: list[Path] = []
    for directory in (start, *start.parents):
        if directory == home:
            break
        folders.append(directory)
        if (directory / ".git").exists():
            return folders
    return [start] if start != home else []


def project_entries(start: Path, home: Path) -> list[PathEntry]:
    """The project's skills folders, walking up from `start` (the project root)."""
    return [PathEntry(folder / relative, kind, max_depth=DEPTH)
            for folder in repository_folders(start, home) for relative, kind in PROJECT_FOLDERS]


def user_entries(home: Path) -> list[PathEntry]:
    return [PathEntry(home / relative, kind, max_depth=DEPTH) for relative, kind in USER_FOLDERS]
