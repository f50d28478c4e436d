"""What the OS sandbox of a command started for a skill allows: the main skill's `sandbox` mode, the
caller's network grant, and the protected paths of the project (the writing-code list of `guard`).

    metadata:
      sandbox: auto        # main skill only: auto (default) | required | off
      network: true        # any skill: commands it starts may use the network (default: none)

The network grant is read from the frontmatter of the skill the command runs for (the `shell`
caller, or for agent code the skill the agent serves; cascaded, so a main skill may grant its whole
project) or from an MCP server's declaration, never from a call's arguments: a model's own call
cannot switch it on. See docs/sandbox.md.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.context.caller import caller_skill
from agentapps.core.confine import PROTECTED_FOR_WRITE
from agentapps.errors import ConfigError
from agentapps.files.guard import CODE_FOLDERS, CODE_SEGMENTS, CONDA_MARKER, VENV_MARKER
from agentapps.process.sandbox import DEFAULT_MODE, MODES, Sandbox, choose
from agentapps.tools.names import is_skill_file
from agentapps.tools.packages import LOCK_FILE

if TYPE_CHECKING:
    from agentapps.context.context import Config, Context, Globals
    from agentapps.types import ToolDef

# Folders never searched for protected paths: no skill is loaded from them, and they can be huge.
NOT_SEARCHED = frozenset({"node_modules", "__pycache__"})


def _line(tool: ToolDef, keys: list[str | int]) -> int | None:
    if tool.path is None:
        return None
    from agentapps.tools.locate import KeyLines  # only for the error

    return KeyLines(tool.path).written(keys)


def sandbox_mode(main: ToolDef | None) -> str:
    """The main skill's `sandbox` mode (ConfigError naming its file and line for a bad value)."""
    value: Any = main.metadata.get("sandbox", DEFAULT_MODE) if main is not None else DEFAULT_MODE
    if value is False:  # YAML reads a bare `off` as false
        return "off"
    if isinstance(value, str) and value in MODES:
        return value
    assert main is not None
    raise ConfigError(f"Main skill '{main.name}' has `sandbox: {str(value)[:40]!r}`; use auto, required or off.",
                      skill=main.name, file=main.path, line=_line(main, ["metadata", "sandbox"]),
                      setting=("sandbox",))


def network_granted(tool: ToolDef | None, meta: dict[str, Any]) -> bool:
    """Whether `meta` (the metadata of `tool`, the skill the command runs for) grants the network."""
    value = meta.get("network", False)
    if isinstance(value, bool):
        return value
    name = tool.name if tool is not None else "?"
    raise ConfigError(f"Skill '{name}' has `network: {str(value)[:40]!r}`; use true or false.", skill=name,
                      file=tool.path if tool is not None else None,
                      line=_line(tool, ["metadata", "network"]) if tool is not None else None,
                      setting=("network",))


def _root_entry_protected(name: str) -> bool:
    return (name in PROTECTED_FOR_WRITE or name in ("Jenkinsfile", LOCK_FILE) or name.startswith(".gitlab-ci")
            or f"{name}/" in CODE_FOLDERS)


def protected_paths(root: str) -> list[str]:
    """The real paths inside the project `root` a sandboxed command may not change: `.agent-apps/`
    and `.git`, CI configuration, every Python environment and git folder at any depth, every
    folder holding a skill file (and, in the root itself, the skill files), and the real files
    behind symlinked skills. Folders in NOT_SEARCHED are not looked into."""
    found: list[str] = []
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        names = {e.name for e in entries}
        if folder != root and (VENV_MARKER in names or CONDA_MARKER in names):
            found.append(folder)
            continue
        skills = [e for e in entries if is_skill_file(e.name)]
        for entry in skills:
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if real.startswith(root + os.sep) and os.path.exists(real):
                    found.append(real)
        if skills and folder != root:
            found.append(folder)
            continue
        found += [e.path for e in skills if not e.is_symlink() and folder == root]
        for entry in entries:
            if (folder == root and _root_entry_protected(entry.name)) or entry.name in CODE_SEGMENTS:
                if not entry.is_symlink():
                    found.append(entry.path)
            elif entry.is_dir(follow_symlinks=False) and entry.name not in NOT_SEARCHED:
                todo.append(entry.path)
    return sorted(set(found))


def _cache_inside(root: str) -> list[str]:
    """agentapps' own cache, when the project contains it (compiled skill code the next run trusts)."""
    from agentapps.tools.bytecode import cache_base

    base = cache_base()
    real = os.path.realpath(base) if base is not None else None
    return [real] if real is not None and real.startswith(root + os.sep) and os.path.isdir(real) else []


def prepare(mode: str, origin: str, project: Path, network: bool, cwd: str | None = None,
            shown: tuple[str, ...] = ()) -> Sandbox | None:
    """The sandbox for a command of this project, or None to run it bare (`off`, or `auto` where
    bwrap cannot run); SandboxUnavailableError for `required` there. A `cwd` outside the project
    (an MCP server's declared folder) is writable too, its protected paths kept. Reads the disk:
    run it off the loop."""
    binary = choose(mode, origin=origin)
    if binary is None:
        return None
    root = os.path.realpath(project)
    also = os.path.realpath(cwd) if cwd is not None else None
    also = also if also is not None and os.path.isdir(also) and not _within(also, root) else None
    # (a run at / outside any project: the root is not writable, so there is nothing to search)
    protected = {*protected_paths(root), *_cache_inside(root)} if root != "/" else set()
    if also is not None:
        protected |= {*protected_paths(also), *_cache_inside(also)}
    visible = tuple(sorted({os.path.realpath(f) for f in shown if os.path.isdir(f)}))
    return Sandbox(binary, root, tuple(sorted(protected)), also=(also,) if also else (), network=network,
                   home=str(Path.home()), shown=visible)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _origin(config: Config) -> str:
    main = config.main_tool
    return str(main.path) if main is not None and main.path is not None else "the default"


def interpreter_folders() -> tuple[str, ...]:
    """The folders of the Python running agentapps (its environment and the installation behind it)
    that lie under the home folder or the temporary folder, which the sandbox hides: a venv under
    /tmp, a pyenv Python in ~/.pyenv. Shown again read-only, they let a sandboxed command run the
    same `python` (an MCP server started with it, a shell line calling it). Code, no secrets."""
    hidden = [os.path.realpath(p) for p in (str(Path.home()), tempfile.gettempdir(), "/tmp")]
    hidden = [h for h in hidden if h != "/"]
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return tuple(sorted(p for p in prefixes if any(_within(p, h) and p != h for h in hidden)))


async def for_run(g: Globals, network: bool, cwd: str | None = None) -> Sandbox | None:
    """The sandbox for a command the run starts with this network grant, in `cwd` when given (None:
    run it bare). The search path's folders stay readable (a folder skill in `~/.agent-apps/skills`
    runs its scripts), read-only, and so does the Python running agentapps where it would be hidden
    (`interpreter_folders`)."""
    config = g.config
    mode = sandbox_mode(config.main_tool)
    if mode == "off":
        return None
    project = Path(config.project or config.cwd)
    shown = (*(str(entry.directory) for entry in g.lookup.roots), *interpreter_folders())
    return await asyncio.to_thread(prepare, mode, _origin(config), project, network, cwd, shown)


async def command_sandbox(ctx: Context) -> Sandbox | None:
    """The sandbox for a command `ctx` (a `shell` call) runs: the network only when the skill it runs
    for grants it (a direct call from the command line: the main skill)."""
    config = ctx.globals.config
    caller = caller_skill(ctx)
    if caller is not None:
        network = network_granted(caller.tool, caller.meta)
    else:
        main = config.main_tool
        network = network_granted(main, main.metadata if main is not None else {})
    return await for_run(ctx.globals, network)
