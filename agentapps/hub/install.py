"""Putting a package's files in `.agent-apps/packages/NAME/`: exported from git at one commit,
hashed, checked against the lock when it pins a hash, then swapped in whole (a failed install
leaves the old folder as it was)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from agentapps.errors import IntegrityError, PackageError, SkillLoadError
from agentapps.hub.git import Repository
from agentapps.hub.sources import parse_source
from agentapps.tools.loader import load_file
from agentapps.tools.names import is_skill_file, name_from_file
from agentapps.tools.packages import PACKAGES_DIR, file_digests, integrity_of, remember

REQUIREMENTS = "requirements.txt"


def skills_in(folder: Path) -> list[str]:
    """The names of the skills a package folder holds (NAME/SKILL.md folders, NAME.skill.md or
    .skill.py files), as their frontmatter names them; a file that does not load by its file name."""
    names: set[str] = set()
    for path in folder.rglob("*"):
        if path.is_file() and is_skill_file(path.name):
            try:
                names.add(load_file(path).name)
            except SkillLoadError:
                names.add(name_from_file(path.name, path.parent.name))
    return sorted(names)


def python_requirements(folder: Path) -> list[str]:
    """What the package's `requirements.txt` asks for (comments and options left out)."""
    try:
        lines = (folder / REQUIREMENTS).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [line.split("#", 1)[0].strip() for line in lines
            if line.split("#", 1)[0].strip() and not line.lstrip().startswith("-")]


class Staged:
    """A package exported into a temporary folder beside its final place."""

    def __init__(self, project: Path, name: str) -> None:
        self.project, self.name = project, name
        self.folder = project / PACKAGES_DIR / f".tmp-{name}-{os.getpid()}"
        self.digests: dict[str, str] = {}
        self.integrity = ""

    def export(self, url: str, commit: str, path: str) -> Staged:
        shutil.rmtree(self.folder, ignore_errors=True)
        repo = Repository(self.project, url)
        repo.ensure(commit)
        repo.export(commit, path, self.folder)
        self.digests = file_digests(self.folder)
        self.integrity = integrity_of(self.digests)
        return self

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def place(self) -> None:
        """Swap the staged folder in for the installed one."""
        final = self.project / PACKAGES_DIR / self.name
        old = final.with_name(f".old-{self.name}-{os.getpid()}")
        if final.exists():
            os.replace(final, old)
        os.replace(self.folder, final)
        shutil.rmtree(old, ignore_errors=True)
        remember(self.project, self.name, self.integrity, self.digests, final)


def install_locked(project: Path, name: str, entry: dict[str, Any]) -> Staged:
    """Install a lock entry exactly: its commit, checked against its integrity."""
    for key in ("url", "commit", "integrity"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise IntegrityError(f"Package '{name}' in the lock file has no `{key}`; run 'agentapps install' "
                                 "without --frozen to pin it.")
    staged = Staged(project, name)
    try:
        staged.export(_url(project, entry), entry["commit"], str(entry.get("path") or ""))
        if staged.integrity != entry["integrity"]:
            raise IntegrityError(f"Package '{name}' at commit {entry['commit'][:12]} of {entry['source']} does not "
                                 f"match the lock file's integrity ({staged.integrity[:20]}... is not "
                                 f"{entry['integrity'][:20]}...); nothing was installed.")
        staged.place()
    except BaseException:
        staged.discard()
        raise
    return staged


def _url(project: Path, entry: dict[str, Any]) -> str:
    """Where to fetch a lock entry from: its source again when that is a folder (a relative one is
    the project's, wherever the project is checked out), else the URL the lock file names."""
    try:
        return parse_source(str(entry.get("source") or ""), project).url
    except PackageError:
        # the URL is held to the same rules as a source (no `ext::`/`fd::`, no leading '-')
        return parse_source(str(entry["url"]), project).url


def remove_folder(project: Path, name: str) -> bool:
    folder = project / PACKAGES_DIR / name
    if not folder.exists():
        return False
    if folder.is_symlink() or not folder.is_dir():
        raise PackageError(f"'{folder}' is not a package folder; remove it by hand.")
    shutil.rmtree(folder)
    (project / ".agent-apps" / "cache" / "hub" / f"{name}.json").unlink(missing_ok=True)
    return True
