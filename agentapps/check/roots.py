"""Rules about files within a root: load errors, two skills with one name, shadowing a bundled skill
(from the checked roots, or from the user's own skill folders, which every project sees)."""

from __future__ import annotations

from pathlib import Path

from agentapps.check.findings import Finding
from agentapps.check.scope import Scope, Site
from agentapps.tools.index import Broken
from agentapps.tools.locate import KeyLines
from agentapps.types import ToolDef


def load_errors(scope: Scope) -> list[Finding]:
    """Files the loader refuses, at the file and line its SkillLoadError names."""
    found: list[Finding] = []
    for item in scope.items():
        if isinstance(item, Broken):
            error = item.error
            path = error.file or str(item.path)
            found.append(Finding(scope.shown(path), error.line or 1, "error", "load-error", error.message))
    return found


def duplicates(scope: Scope) -> list[Finding]:
    """Two files of one root with the same name: each later file is an error naming both."""
    found: list[Finding] = []
    for index in scope.roots:
        for name, paths in index.names.items():
            if len(paths) < 2:
                continue
            items = [index.item(p) for p in paths]
            first, *rest = sorted(items, key=lambda i: str(i.path))
            for item in rest:
                line = KeyLines(item.path).line(["name"]) if isinstance(item, ToolDef) else 1
                message = (f"Two skills are named '{name}' in the same folder tree: "
                           f"{scope.shown(first.path)} and {scope.shown(item.path)}. Rename one.")
                found.append(Finding(scope.shown(item.path), line, "error", "duplicate-name", message))
    return found


def _same_file(a: Path, b: Path | None) -> bool:
    """Identical bytes: the same skill installed twice (a checkout beside its wheel), not a replacement."""
    try:
        return b is not None and a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def shadowing(site: Site) -> list[Finding]:
    """A checked skill with the name of a bundled one replaces it on the search path: say so."""
    tool, found = site.tool, list[Finding]()
    same_name = site.scope.bundled_named(tool.name)
    if not same_name:
        return found  # most skills: no path to resolve at all
    here = tool.path.resolve() if tool.path else None
    for item in same_name:
        if item.path is None or item.path.resolve() == here or _same_file(item.path, here):
            continue  # checking the bundled folder itself (or a checkout of it, when installed)
        message = f"Skill '{tool.name}' shadows bundled skill '{tool.name}' ({item.path})."
        found.append(site.at(["name"], "warning", "shadows-bundled", message))
    return found


USER_KINDS = ("user", "user-agents", "user-claude")  # ~/.agent-apps/skills, ~/.agents/skills, ~/.claude/skills


def user_shadowing(scope: Scope) -> list[Finding]:
    """A skill in the user's own folders with the name of a bundled one replaces it in every
    project (an Agent Skills collection in ~/.claude/skills with a `shell` or `file-read`): say so
    when the project is checked, at the user's file."""
    found: list[Finding] = []
    for index in scope.lookup.indexes:
        if index.entry.kind not in (*USER_KINDS, "package"):
            continue
        index.ensure(force_check=False, interval=0.0)
        for name, items in index.by_name.items():
            for item in items:
                if item.path is None or not any(b.path is not None and not _same_file(b.path, item.path)
                                                for b in scope.bundled_named(name)):
                    continue
                if index.entry.kind == "package":  # an installed package (third-party code) replacing, say, `shell`
                    package = item.path.relative_to(index.entry.directory).parts[0]
                    message = (f"Skill '{name}' of package '{package}' shadows bundled skill '{name}' in this "
                               "project (the bundled one is never used); remove the package if that is not meant.")
                    found.append(Finding(scope.shown(item.path), 1, "warning", "package-shadows-bundled", message))
                    break
                message = (f"Skill '{name}' in your user folder shadows bundled skill '{name}' in every project "
                           f"(the bundled one is never used); rename it if that is not meant.")
                found.append(Finding(scope.shown(item.path), 1, "warning", "user-shadows-bundled", message))
                break
    return found
