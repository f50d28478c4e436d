"""Bootstrap, the one builtin: find the project and its main skill, build the search path and globals."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.cascade import LOCAL_ENV_PREFIX, SEED_LOCAL_ENV_PREFIX
from agentapps.context.context import Config, Context, Globals
from agentapps.context.manager import new_context
from agentapps.errors import ConfigError, SkillLoadError
from agentapps.tools import skilldirs
from agentapps.tools.loader import RUN_STARTED, load_file
from agentapps.tools.lookup import Lookup
from agentapps.tools.packages import PACKAGES_DIR
from agentapps.types import PathEntry, ToolDef

if TYPE_CHECKING:
    from agentapps.cascade.local import Override

DATA_DIR = ".agent-apps"
COMPILED_DIR = f"{DATA_DIR}/compiled"  # `agentapps compile` writes here; first on the search path
NO_PROJECT_DEPTH = 1


def bundled_skills_dir() -> Path:
    """Where the bundled skills live: inside the installed package, or beside it in a checkout."""
    package = Path(__file__).resolve().parent
    installed = package / "_bundled" / "skills"
    return installed if installed.is_dir() else package.parent / "skills"


def user_skills_dir() -> Path:
    return Path(os.environ.get("AGENTAPPS_HOME") or Path.home() / DATA_DIR) / "skills"


def _main_candidates(directory: Path) -> list[ToolDef]:
    found: list[ToolDef] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return found
    names = [n for n in names if n.endswith(".skill.md") or n == "SKILL.md"]
    if not names:
        return found
    from agentapps.tools.index_cache import open_manifest

    manifest = open_manifest(directory, "project")  # a project root's index has its files parsed
    try:
        for name in names:
            tool = _cached(manifest, directory / name) or _loaded(directory / name, directory)
            if tool is not None and tool.is_main:
                found.append(tool)
    finally:
        if manifest is not None:
            manifest.close()
    return found


def _cached(manifest: Any, path: Path) -> ToolDef | None:
    """The definition from the index cache, when it is of the file as it is now (no YAML parse)."""
    row = manifest.entry(str(path)) if manifest is not None else None
    if row is None:
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    if (row[0], row[1]) != (info.st_mtime_ns, info.st_size):
        return None
    item = manifest.item(str(path))
    return item if isinstance(item, ToolDef) else None


def _loaded(path: Path, directory: Path) -> ToolDef | None:
    try:
        return load_file(path, root=directory, root_kind="project")
    except SkillLoadError:
        if _declares_main(path):
            # fail closed: the project's main skill carries its trust rules, allowed-tools and
            # settings; running without them would run what they guard unasked
            raise
        return None  # another skill: reported when listed or invoked, never fatal to bootstrap


_MAIN_ROLE = re.compile(r"""^\s*role\s*:\s*["']?main["']?\s*(#.*)?$""", re.MULTILINE)


def _declares_main(path: Path) -> bool:
    """Whether a skill file that does not load says `role: main` in its frontmatter: it was meant
    to be the project's main skill."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if not text.startswith("---"):
        return False
    end = text.find("\n---", 3)
    return bool(_MAIN_ROLE.search(text[3:end if end != -1 else len(text)]))


def find_project(cwd: Path) -> tuple[Path | None, ToolDef | None]:
    """Walk up from cwd to the first folder with a `role: main` skill or a `.agent-apps/` folder."""
    home = Path.home().resolve()
    for directory in (cwd, *cwd.parents):
        mains = _main_candidates(directory)
        if len(mains) > 1:
            files = ", ".join(str(m.path) for m in mains)
            raise ConfigError(f"More than one main skill (role: main) in {directory}: {files}. Keep one.")
        if mains:
            return directory, mains[0]
        if (directory / DATA_DIR).is_dir() and directory != home:
            return directory, None
    return None, None


def log_dir_for(cwd: Path) -> Path:
    """Where the run log goes for a run that failed before bootstrap: `Config.log_dir`'s rule (the
    project's `.agent-apps/`, else the user's), so a run outside any project never leaves a
    `.agent-apps/` behind (which would make its folder a project)."""
    project, _ = find_project(cwd)
    return (project if project is not None else Path.home()) / DATA_DIR


def _project_entries(project: Path, main: ToolDef | None, bundled: Path) -> list[PathEntry]:
    extra: list[PathEntry] = []
    ignore: list[str] = []
    paths: Any = main.metadata.get("paths") if main else None
    for i, item in enumerate(paths if isinstance(paths, list) else []):
        if isinstance(item, str):
            extra.append(PathEntry((project / item).resolve(), "project"))
        elif isinstance(item, dict) and isinstance(item.get("ignore"), str):
            ignore.append(item["ignore"])
        elif isinstance(item, dict) and isinstance(item.get("external"), str):
            extra.append(PathEntry((project / item["external"]).resolve(), "env"))
        else:
            raise ConfigError(
                f"Main skill '{main.name if main else ''}' has a `paths` entry {item!r}; use a folder, "
                "{ignore: pattern} or {external: folder}.",
                file=main.path if main else None, setting=("paths", str(i)),
                line=_line_of(main, ["metadata", "paths", i]),
            )
    if bundled.is_relative_to(project):
        ignore.append(str(bundled.relative_to(project)))
    entries = [PathEntry(project / DATA_DIR / "skills", "project-skills")]
    entries += extra
    entries.append(PathEntry(project, "project", ignore=tuple(ignore)))
    return entries


def _line_of(tool: ToolDef | None, keys: list[str | int]) -> int | None:
    if tool is None or tool.path is None:
        return None
    from agentapps.tools.locate import KeyLines  # only for the error

    return KeyLines(tool.path).written(keys)


def search_path(cwd: Path, project: Path | None, main: ToolDef | None) -> list[PathEntry]:
    bundled = bundled_skills_dir()
    entries: list[PathEntry] = []
    if project is not None:  # `agentapps compile`'s output shadows its markdown source, wherever that is
        entries.append(PathEntry(project / COMPILED_DIR, "compiled", max_depth=0))
    for item in (os.environ.get("AGENTAPPS_PATH") or "").split(os.pathsep):
        if item.strip():
            try:
                folder = Path(item).expanduser()
            except RuntimeError:  # `~someone` with no such user: keep it literal
                folder = Path(item)
            entries.append(PathEntry(folder.resolve(), "env"))
    if project is not None:
        entries += _project_entries(project, main, bundled)
    else:
        ignore = (str(bundled.relative_to(cwd)),) if bundled.is_relative_to(cwd) else ()
        entries.append(PathEntry(cwd, "project", max_depth=NO_PROJECT_DEPTH, ignore=ignore))
    home = Path.home().resolve()
    entries += skilldirs.project_entries(project or cwd, home)  # .agents/.claude/.github skills up to .git
    if project is not None:  # installed hub packages: after the project's own skills, before the user's
        entries.append(PathEntry(project / PACKAGES_DIR, "package"))
    entries.append(PathEntry(user_skills_dir(), "user"))
    entries += skilldirs.user_entries(home)
    entries.append(PathEntry(bundled, "bundled"))
    seen: set[Path] = set()
    unique: list[PathEntry] = []
    for entry in entries:
        if entry.directory not in seen:
            seen.add(entry.directory)
            unique.append(entry)
    return unique


BOOTSTRAP = ToolDef("bootstrap", "memory", {"name": "bootstrap", "metadata": {"$inherit": False}}, uri="inline://bootstrap")


def bootstrap(cwd: Path | None = None, overrides: dict[str, Any] | None = None,
              local: Sequence[Override] = ()) -> Context:
    """Return the root context every invocation of this process descends from. `local`: the
    run's --local/--local-json overrides of the main skill's metadata (after AGENTAPPS_LOCAL_*)."""
    started = time.time_ns()
    cwd = (cwd or Path.cwd()).resolve()
    project, main = find_project(cwd)
    changes: list[Override] = []
    if local or any(k.startswith((LOCAL_ENV_PREFIX, SEED_LOCAL_ENV_PREFIX)) for k in os.environ):  # the module only when used
        from agentapps.cascade.local import apply, collect

        main, changes = apply(main, collect(local, os.environ))
    if main is not None and "sandbox" in main.metadata:  # fail closed: a bad mode stops every run
        from agentapps.files.sandboxing import sandbox_mode

        sandbox_mode(main)
    config = Config(
        cwd=cwd,
        project=project,
        bundled=bundled_skills_dir(),
        main_tool=main,
        overrides=dict(overrides or {}),
    )
    depth = os.environ.get("AGENTAPPS_MAX_DEPTH")
    if depth:
        if not depth.isdigit() or not 1 <= int(depth) <= 1000:
            raise ConfigError(f"AGENTAPPS_MAX_DEPTH must be a whole number from 1 to 1000, got {depth!r}.")
        config.max_depth = int(depth)
    RUN_STARTED.set(started)  # skill files written after this are never loaded by this run
    lookup = Lookup(search_path(cwd, project, main))
    if changes and main is not None:  # the main skill, when it runs, is the overridden one
        lookup.register(main)
        config.overrides["local"] = changes
    g = Globals(config=config, lookup=lookup)
    if changes:
        from agentapps.cascade.local import register_secrets

        register_secrets(g.internals, changes)
    if main is not None and main.metadata.get("mcp"):  # the project's MCP servers: their tools are skills
        from agentapps.mcp.registry import declare_main

        declare_main(g)
    if (main is not None and main.metadata.get("stores")) or os.environ.get("AGENTAPPS_REDIS_URL"):
        from agentapps.callbacks.remote import RemoteCallbacks  # refs other processes made

        lookup.providers.append(RemoteCallbacks(g))
    root = new_context(BOOTSTRAP, dict(overrides or {}), None, g)
    root.locals.config.update(cwd=str(cwd), project=str(project) if project else None)
    return root
