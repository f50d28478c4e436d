"""A folder skill's own folder (`NAME/SKILL.md` and the files beside it), read-only to its agent.

Public Agent Skills keep references, scripts and templates beside their SKILL.md. The agent
serving such a skill is told they exist (system prompt) and reads them with `skill-file`,
wherever the skill lives (project, user or bundled root). A SKILL.md at the top of a search-path
root (a project's main skill, say) has no folder of its own: its folder is the whole root.
"""

from __future__ import annotations

from pathlib import Path

from agentapps.files.ops import list_files
from agentapps.tools.names import FOLDER_SKILL_FILE
from agentapps.types import ToolDef

MAX_LISTED = 100  # files named in the system prompt


def skill_folder(tool: ToolDef | None) -> Path | None:
    """The folder of a folder skill, or None (not a folder skill, or a search-path root)."""
    if tool is None or tool.kind != "markdown" or tool.path is None or tool.path.name != FOLDER_SKILL_FILE:
        return None
    folder = tool.path.parent
    if tool.root is not None and folder.resolve() == Path(tool.root).resolve():
        return None
    return folder


def folder_files(folder: Path, limit: int = MAX_LISTED) -> list[str]:
    """The files beside SKILL.md (relative paths, SKILL.md itself left out), at most `limit`."""
    return [f for f in list_files(folder, "**/*", limit=limit + 1) if f != FOLDER_SKILL_FILE][:limit]
