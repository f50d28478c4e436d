"""Files `agentapps compile` writes (`.agent-apps/compiled/NAME.skill.py`): the `@generated
source-hash:` marker on their first line and the markdown source they name in
`metadata.compiled-from` (relative to the project holding `.agent-apps/compiled/`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentapps.types import ToolDef

MARKER = "# @generated source-hash: "


def source_hash(path: Path) -> str:
    """SHA-256 (hex) of a skill file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def marker_of(path: Path) -> str | None:
    """The source hash a compiled file's first line carries; None when it has no marker (a file
    written by hand, which a compile never overwrites)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(512).decode("utf-8", "replace").rstrip("\r\n")
    except OSError:
        return None
    return first[len(MARKER):].strip() if first.startswith(MARKER) else None


def compiled_source(tool: ToolDef) -> Path | None:
    """The markdown source of a skill `agentapps compile` wrote, or None."""
    origin = tool.metadata.get("compiled-from")
    if tool.root_kind != "compiled" or tool.root is None or not isinstance(origin, str):
        return None
    return tool.root.parent.parent / origin
