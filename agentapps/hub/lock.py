"""The lock file, `agentapps-lock.json` at the project root: what is installed, pinned to a commit
and a content hash. Commit it; `agentapps install --frozen` restores exactly what it says.

    {"lockfileVersion": 1,
     "packages": {"NAME": {"source": SPEC, "url": GIT URL, "path": FOLDER IN THE REPO,
                           "commit": SHA, "integrity": "sha512-...", "version": "1.2.0" | null,
                           "ref": REF ASKED FOR | null, "requested": RANGE | null, "direct": true,
                           "registry": URL | null, "dependencies": {NAME: RANGE},
                           "python": [REQUIREMENT], "skills": [NAME]}}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentapps.core.atomic import FileLock, write_atomic
from agentapps.errors import PackageError
from agentapps.tools.packages import LOCK_FILE, LOCK_VERSION, read_lock

VERSION = LOCK_VERSION


def load(project: Path) -> dict[str, dict[str, Any]]:
    """The locked packages ({} with no lock file); a broken lock file is a PackageError naming it."""
    packages = read_lock(project)
    for name, entry in packages.items():
        if not isinstance(entry, dict):  # never skipped: install would then remove the package
            raise PackageError(f"Package {name!r} in the lock file is not an object.", file=project / LOCK_FILE)
    return {name: dict(entry) for name, entry in packages.items()}


def save(project: Path, packages: dict[str, dict[str, Any]]) -> None:
    data = {"lockfileVersion": VERSION, "packages": {name: packages[name] for name in sorted(packages)}}
    write_atomic(project / LOCK_FILE, (json.dumps(data, indent=2, sort_keys=False) + "\n").encode(), mode=0o644)


def guard(project: Path) -> FileLock:
    """One hub operation at a time per project (a lock file beside the cache, never the lock file)."""
    return FileLock(project / ".agent-apps" / "cache" / "hub.lock", timeout=120.0)
