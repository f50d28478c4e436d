"""Installed packages (`.agent-apps/packages/NAME/`): their content hash, and the check that a
package is what the lock file pins before any of its skills is used.

The integrity of a folder is `sha512-` and the base64 SHA-512 of one line per regular file, in
the order of their sorted relative POSIX paths: `PATH` NUL `hex SHA-512 of the bytes` LF. Only
paths and bytes count (not modes or times), so a package exported twice from the same commit has
the same integrity on any machine. A symlink, or anything that is not a file or a folder, is
never part of a package.

Verifying rehashes a package only when it may have changed: the last verified state is kept in
`.agent-apps/cache/hub/NAME.json` with a stat fingerprint of every file (size, modification and
change time, inode). The change time cannot be set back from user space, so a file written since
then changes the fingerprint and the package is hashed again. A run that uses no package skill
pays nothing: every search path has this module, so it imports nothing beyond `os` until a
package is verified.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentapps.errors import IntegrityError, PackageError
from agentapps.types import ToolDef

PACKAGES_DIR = Path(".agent-apps") / "packages"
CACHE_DIR = Path(".agent-apps") / "cache" / "hub"
LOCK_FILE = "agentapps-lock.json"
LOCK_VERSION = 1


def package_files(folder: Path) -> list[tuple[str, os.stat_result]]:
    """Every regular file under `folder` as (relative POSIX path, stat), sorted by path. A symlink
    or special file is a PackageError naming it."""
    found: list[tuple[str, os.stat_result]] = []

    def walk(directory: Path, prefix: str) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_symlink():
                    raise PackageError(f"'{rel}' is a symlink; a package holds only files and folders.",
                                       file=Path(entry.path))
                if entry.is_dir(follow_symlinks=False):
                    walk(Path(entry.path), rel + "/")
                elif entry.is_file(follow_symlinks=False):
                    found.append((rel, entry.stat(follow_symlinks=False)))
                else:
                    raise PackageError(f"'{rel}' is not a regular file.", file=Path(entry.path))

    walk(folder, "")
    found.sort(key=lambda item: item[0])
    return found


def file_digests(folder: Path) -> dict[str, str]:
    """{relative path: hex SHA-512 of its bytes}, in sorted path order."""
    import hashlib

    digests: dict[str, str] = {}
    for rel, _ in package_files(folder):
        digest = hashlib.sha512()
        with open(folder / rel, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
        digests[rel] = digest.hexdigest()
    return digests


def integrity_of(digests: dict[str, str]) -> str:
    import base64
    import hashlib

    outer = hashlib.sha512()
    for rel in sorted(digests):
        outer.update(f"{rel}\0{digests[rel]}\n".encode())
    return "sha512-" + base64.b64encode(outer.digest()).decode("ascii")


def fingerprint(folder: Path) -> str:
    """A cheap summary of the folder's files as they are on disk now (no file is read)."""
    import hashlib

    summary = hashlib.sha256()
    for rel, info in package_files(folder):
        summary.update(f"{rel}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n".encode())
    return summary.hexdigest()


def read_lock(project: Path) -> dict[str, Any]:
    """The lock file's `packages` table ({} when there is no lock file)."""
    import json

    path = project / LOCK_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise PackageError(f"Cannot read the lock file: {exc.strerror}.", file=path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PackageError(f"The lock file is not valid JSON: {exc.msg}.", file=path, line=exc.lineno) from None
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict):
        raise PackageError("The lock file has no `packages` object.", file=path)
    version = data.get("lockfileVersion", LOCK_VERSION)
    if version != LOCK_VERSION or isinstance(version, bool):  # a newer format is not read as this one
        raise PackageError(f"The lock file has lockfileVersion {version!r:.40}; this agentapps reads version "
                           f"{LOCK_VERSION}: upgrade agentapps, or write the lock file again with this one.", file=path)
    return packages


def remember(project: Path, name: str, integrity: str, digests: dict[str, str], folder: Path) -> None:
    """Keep the verified state of a package, so the next run need not hash it again."""
    import json

    cache = project / CACHE_DIR
    try:
        cache.mkdir(parents=True, exist_ok=True)
        record = {"integrity": integrity, "fingerprint": fingerprint(folder), "files": digests}
        tmp = cache / f".{name}.json.tmp{os.getpid()}"
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, cache / f"{name}.json")
    except OSError:
        pass  # a read-only cache costs a rehash next time, nothing else


def _remembered(project: Path, name: str) -> dict[str, Any]:
    import json

    try:
        data = json.loads((project / CACHE_DIR / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _difference(before: dict[str, str], now: dict[str, str]) -> str:
    for rel in sorted(set(before) | set(now)):
        if rel not in now:
            return f"file '{rel}' was removed"
        if rel not in before:
            return f"file '{rel}' was added"
        if before[rel] != now[rel]:
            return f"file '{rel}' was changed"
    return "its content differs from the lock file"


def verify_installed(project: Path, name: str) -> None:
    """Raise IntegrityError unless `.agent-apps/packages/NAME` is exactly what the lock file pins."""
    folder = project / PACKAGES_DIR / name
    entry = read_lock(project).get(name)
    if not isinstance(entry, dict) or not isinstance(entry.get("integrity"), str):
        raise IntegrityError(f"Package '{name}' is installed but not in {LOCK_FILE}; its skills are refused. "
                             f"Run 'agentapps install' to restore the locked packages.", file=folder)
    expected = entry["integrity"]
    known = _remembered(project, name)
    try:
        if known.get("integrity") == expected and known.get("fingerprint") == fingerprint(folder):
            return
        digests = file_digests(folder)
    except (OSError, PackageError) as exc:
        raise IntegrityError(f"Package '{name}' cannot be verified ({exc}); its skills are refused. "
                             "Run 'agentapps install' to restore it.", file=folder) from None
    if integrity_of(digests) != expected:
        before = known.get("files") if known.get("integrity") == expected else None
        what = _difference(before, digests) if isinstance(before, dict) else "its content differs from the lock file"
        raise IntegrityError(f"Package '{name}' was changed after it was installed: {what}; its skills are "
                             "refused. Run 'agentapps install' to restore it.", file=folder)
    remember(project, name, expected, digests, folder)


def verify_tool(tool: ToolDef) -> None:
    """Before a skill from an installed package is used: its package must match the lock file."""
    if tool.root_kind != "package" or tool.path is None or tool.root is None:
        return
    name = tool.path.relative_to(tool.root).parts[0]
    verify_installed(tool.root.parent.parent, name)
