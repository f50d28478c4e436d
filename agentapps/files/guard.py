"""Writing skill code is privileged: creating or changing a skill file needs the trust gate's yes."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from agentapps.context.caller import caller_skill
from agentapps.tools.names import is_skill_file
from agentapps.tools.packages import LOCK_FILE

if TYPE_CHECKING:
    from agentapps.context.context import Context


# Where files become code that runs later with more power than the agent has: Python environments
# (a `.pth` file runs at every interpreter start) and git hooks at any depth, and the CI
# configuration at the root (workflows, composite actions, ...). Environments are known by name
# (`.venv`, PEP 582's `__pypackages__`, any `site-packages`) and by their marker, whatever their
# folder is called: `pyvenv.cfg` for venv and virtualenv (`env/`, `.tox/py311/`, `.nox/x/`), a
# `conda-meta/` folder for conda, mamba and pixi (`conda create -p ./env`, `.pixi/envs/default/`).
CODE_SEGMENTS = frozenset({".venv", "venv", ".git", "__pypackages__", "site-packages", "dist-packages",
                           "conda-meta"})
VENV_MARKER = "pyvenv.cfg"
CONDA_MARKER = "conda-meta"
CODE_FOLDERS = (".github/", ".gitlab-ci", ".gitlab/", ".circleci/", ".buildkite/", "Jenkinsfile")


def is_protected(rel: str, ctx: Context | None = None) -> bool:
    """Whether writing the project-relative path `rel` changes code: a file the loader would take
    as a skill (`*.skill.md`, `*.skill.py`, `SKILL.md` in any folder: main skill and pipeline
    included), the real file behind any skill on the search path (a symlinked skill), a file in a
    Python environment (by name, or any folder holding `pyvenv.cfg` or `conda-meta/`) or git
    folder at any depth, CI configuration, or the hub's lock file (what `install` fetches and runs)."""
    if is_skill_file(rel.rsplit("/", 1)[-1]) or rel.startswith(CODE_FOLDERS) or rel == LOCK_FILE:
        return True
    if CODE_SEGMENTS.intersection(rel.split("/")[:-1]):
        return True
    return ctx is not None and (rel in _skill_targets(ctx) or _in_cache(rel, ctx) or _in_venv(rel, ctx))


def _in_venv(rel: str, ctx: Context) -> bool:
    """Whether a folder on the way to `rel` (or the project root) is a Python environment: it
    holds `pyvenv.cfg` (venv, virtualenv) or `conda-meta/` (conda, mamba, pixi), whatever its name."""
    root = os.path.realpath(ctx.globals.config.project or ctx.globals.config.cwd)
    parts = rel.split("/")[:-1]
    for depth in range(len(parts) + 1):
        folder = os.path.join(root, *parts[:depth])
        if os.path.isfile(os.path.join(folder, VENV_MARKER)) or os.path.isdir(os.path.join(folder, CONDA_MARKER)):
            return True
    return False


def _in_cache(rel: str, ctx: Context) -> bool:
    """agentapps' own cache (compiled skill code, skill indexes) when the project contains it (a
    project at the home folder): a forged entry there would be code or a grant the next run trusts."""
    from agentapps.tools.bytecode import cache_base

    base = cache_base()
    if base is None:
        return False
    root = os.path.realpath(ctx.globals.config.project or ctx.globals.config.cwd)
    real = os.path.realpath(base)
    if not real.startswith(root + os.sep):
        return False
    prefix = os.path.relpath(real, root).replace(os.sep, "/") + "/"
    return rel.startswith(prefix) or rel + "/" == prefix


def _skill_targets(ctx: Context) -> set[str]:
    """Project-relative real paths of the skill files the search path indexes (followed through
    symlinks), so that a `notes.txt` some `x.skill.py` links to is protected like the skill."""
    root = os.path.realpath(ctx.globals.config.project or ctx.globals.config.cwd)
    found: set[str] = set()
    for index in ctx.globals.lookup.indexes:
        for path in index.files:
            real = os.path.realpath(path)
            if real != path and real.startswith(root + os.sep):
                found.add(os.path.relpath(real, root).replace(os.sep, "/"))
    return found


async def approve_code_write(ctx: Context, rel: str, details: dict[str, Any]) -> None:
    """Raise DeniedError unless writing skill file `rel` is approved (`--approve NAME`,
    AGENTAPPS_APPROVE, or a yes on the terminal). A direct call from the command line is the user's
    own action and needs no approval."""
    caller = caller_skill(ctx)
    if caller is None:
        return
    from agentapps.core.driver import blocking
    from agentapps.trust import decide

    g = ctx.globals
    approve = list(g.config.overrides.get("approve") or []) + os.environ.get("AGENTAPPS_APPROVE", "").split()
    interactive = sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")
    await blocking(
        decide, caller=caller.tool.name, callee=ctx.tool.name, rule=f"writing skill code: {rel}",
        args={"path": rel, **details}, data_dir=g.config.data_dir, approve=approve, interactive=interactive,
        timeout=float(os.environ.get("AGENTAPPS_TRUST_TIMEOUT", "60")), writes_code=True,
    )
