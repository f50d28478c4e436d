"""Projects nested in a checked folder: found where the index stops (a folder holding `.agent-apps/`).

A folder scanned as a root leaves out every folder below it that holds `.agent-apps/`: that is a
project of its own, run under its own main skill, so its skills are not the outer root's. `check`
must still cover them (the repository's `examples/` are each such a project), so it finds them here
and checks each as if run from inside it. The walk skips what the index skips (dot-folders,
`node_modules`, `__pycache__`, ...) and the bundled skills of a source checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentapps.tools.index import BOUNDARIES, SKIPPED_DIRS

PROJECT_MARK = ".agent-apps"


def nested_projects(folder: Path) -> list[Path]:
    """The nearest project folders strictly below `folder` (none inside another), in path order."""
    found: list[Path] = []
    for directory, subdirs, files in os.walk(folder):
        here = Path(directory)
        names = {*subdirs, *files}
        if here != folder and names & BOUNDARIES:
            if PROJECT_MARK in names:
                found.append(here)
            subdirs[:] = []
            continue
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in SKIPPED_DIRS)
    return sorted(found)
