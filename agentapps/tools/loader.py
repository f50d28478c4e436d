"""Loading one skill file into a ToolDef; importing a code skill's module only when it runs."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import Any

from agentapps.errors import DeniedError, SkillLoadError
from agentapps.tools.bytecode import compiled
from agentapps.tools.frontmatter import read_markdown, read_python_frontmatter
from agentapps.tools.loopscan import needs_loop
from agentapps.tools.names import FOLDER_SKILL_FILE, is_valid_name, name_from_file
from agentapps.tools.task import add_implicit_task
from agentapps.types import RootKind, ToolDef, ToolFn

MAX_SKILL_FILE_BYTES = 4 * 1024 * 1024
PolicyView = Callable[[Any, dict[str, Any]], dict[str, Any]]


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_FILE_BYTES:
            raise SkillLoadError(
                f"Skill file is larger than {MAX_SKILL_FILE_BYTES // (1024 * 1024)} MiB.", file=path
            )
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillLoadError("Skill file is not valid UTF-8.", file=path) from None
    except OSError as exc:
        raise SkillLoadError(f"Cannot read skill file: {exc.strerror}.", file=path) from None


def _normalize(fm: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    """Check the top-level keys we rely on; unknown keys are kept (Agent Skills compatibility)."""
    fm = dict(fm)
    name = fm.get("name")
    if name is None:
        name = name_from_file(path.name, path.parent.name)
        fm["name"] = name
    if not isinstance(name, str) or not is_valid_name(name):
        raise SkillLoadError(
            f"Invalid skill name {name!r}: use 1-64 characters of a-z, 0-9 and '-', "
            "starting with a letter or digit.",
            file=path,
            line=line,
        )
    tools = fm.get("allowed-tools")
    if isinstance(tools, list):
        fm["allowed-tools"] = " ".join(str(t) for t in tools)
    elif tools is not None and not isinstance(tools, str):
        raise SkillLoadError("`allowed-tools` must be a string or a list of strings.", file=path, line=line)
    meta = fm.get("metadata")
    if meta is None:
        fm["metadata"] = {}
    elif not isinstance(meta, dict):
        raise SkillLoadError("`metadata` must be a mapping.", file=path, line=line)
    for key in ("params", "returns"):
        value = fm["metadata"].get(key)
        if value is not None and not isinstance(value, dict):
            raise SkillLoadError(f"`metadata.{key}` must be a JSON Schema object.", file=path, line=line)
    return fm


def load_file(path: Path, *, root: Path | None = None, root_kind: RootKind | None = None) -> ToolDef:
    """Load a `.skill.md`, `SKILL.md` or `.skill.py` file. Python code is parsed, not executed."""
    text = _read_text(path)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = 0
    if path.name.endswith(".py"):
        fm, line = read_python_frontmatter(text, path)
        fm = _normalize(fm, path, line)
        return ToolDef(fm["name"], "code", fm, path, "", 1, None, path.as_uri(), root, root_kind, mtime,
                       loop=needs_loop(text))
    fm, body, yaml_line, body_line = read_markdown(text, path)
    fm = _normalize(fm, path, yaml_line)
    if path.name == FOLDER_SKILL_FILE:
        fm["metadata"].setdefault("role", "context")
        add_implicit_task(fm["metadata"])  # an Agent Skill takes its request as `task`
    return ToolDef(fm["name"], "markdown", fm, path, body, body_line, None, path.as_uri(), root, root_kind, mtime)


# When the current run started (time.time_ns()): bootstrap sets it for a command-line run; a server
# sets it at the start of each request, in the request's own task (a context variable is per task).
RUN_STARTED: ContextVar[int | None] = ContextVar("agentapps_run_started", default=None)


def refuse_if_written_after(tool: ToolDef, info: os.stat_result | None = None) -> None:
    """Refuse a skill file changed after the current run started: a run never loads skill code
    written while it runs. The inode change time counts too, since `os.utime` can set the
    modification time back but not the change time."""
    not_after_ns = RUN_STARTED.get()
    if not_after_ns is None or tool.path is None:
        return
    try:
        info = info or os.stat(tool.path)
    except OSError:
        return  # gone: reading it fails with its own message
    if max(info.st_mtime_ns, info.st_ctime_ns) > not_after_ns:
        raise DeniedError(
            f"Skill '{tool.name}' was written after this run started ({tool.path}); a run never loads "
            "skill code written while it runs. Run again to use the new version.",
            skill=tool.name, file=tool.path,
        )


def _source(tool: ToolDef, path: Path) -> bytes:
    """The file's bytes, checked and read through one descriptor (no swap between check and read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise SkillLoadError(f"Cannot read skill file: {exc.strerror}.", skill=tool.name, file=path) from None
    with os.fdopen(fd, "rb") as handle:
        refuse_if_written_after(tool, os.fstat(fd))
        return handle.read(MAX_SKILL_FILE_BYTES + 1)


def load_module(tool: ToolDef) -> ModuleType:
    """Import a code skill's module (once per file version) and return it.

    The source is compiled from the bytes read here, never from a `__pycache__` file (which anyone
    able to write beside the skill could forge), and refused if written after the run started."""
    if tool.path is None:
        raise SkillLoadError(f"Skill '{tool.name}' has no code to run.", skill=tool.name)
    module_name = f"agentapps_skill_{abs(hash(str(tool.path))):x}_{tool.mtime_ns}"
    module = sys.modules.get(module_name)
    if module is not None:
        return module
    source = _source(tool, tool.path)
    module = ModuleType(module_name)
    module.__file__ = str(tool.path)
    sys.modules[module_name] = module
    try:
        exec(compiled(source, tool.path), module.__dict__)  # noqa: S102 - importing the skill
    except Exception as exc:  # the skill's own import-time failure
        sys.modules.pop(module_name, None)
        line = error_line(exc, tool.path)
        raise SkillLoadError(
            f"Importing skill '{tool.name}' failed: {type(exc).__name__}: {exc}",
            skill=tool.name,
            file=tool.path,
            line=line,
        ) from exc
    return module


def load_function(tool: ToolDef) -> ToolFn:
    """Import a code skill's module (once) and return its `run` function."""
    if tool.fn is not None:
        return tool.fn
    fn: ToolFn | None = getattr(load_module(tool), "run", None)
    if not callable(fn):
        raise SkillLoadError("A code skill needs a function `run(ctx, args)`.", skill=tool.name, file=tool.path)
    tool.fn = fn
    return tool.fn


def load_policy_view(tool: ToolDef) -> PolicyView | None:
    """A code skill's optional `policy_view(ctx, args)`: the normalised arguments (one resolved
    path, one effective command) that allowed-tools constraints and trust rules are matched on."""
    if tool.kind != "code" or tool.path is None:
        return None
    view = getattr(load_module(tool), "policy_view", None)
    return view if callable(view) else None


def error_line(exc: BaseException, path: Path | None) -> int | None:
    """The innermost line of the skill file `path` in the exception's traceback (the module was
    loaded from that exact path, so its frames carry it as their file name)."""
    if path is None:
        return None
    import traceback

    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == str(path):
            line = frame.lineno
    if line is None and isinstance(exc, SyntaxError) and exc.filename == str(path):
        line = exc.lineno
    return line
