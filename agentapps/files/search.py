"""file-search: a regular expression over the project's text files, `.gitignore` respected, capped.

The expression is matched by RE2 (agentapps.tools.patterns), in time linear in the text, so no
pattern can hang a run. The walk never follows symlinks and skips `.git`, `.agent-apps`,
`node_modules`, `.venv` and `__pycache__`, files the `.gitignore` files ignore, binary files (a
NUL byte in the first 8 KiB) and files over 1 MiB. Output is capped: at most `limit` matching
lines, each cut to 300 characters, and at most 20 000 files read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from agentapps.core.confine import walk
from agentapps.errors import ArgsError, UsageError
from agentapps.files.gitignore import Ignored
from agentapps.files.ops import SKIP_DIRS, glob_matcher, normalize_glob

MAX_FILE_BYTES = 1 << 20
MAX_FILES = 20_000
MAX_LINE_CHARS = 300


def _program(pattern: str, ignore_case: bool) -> Any:
    from agentapps.tools.patterns import compiled, pattern_problem

    text = f"(?i){pattern}" if ignore_case else pattern
    problem = pattern_problem(text)
    if problem is not None:
        raise ArgsError(f"file-search: the pattern cannot be used: {problem}.")
    return compiled(text)


def _text(dir_fd: int, name: str) -> str | None:
    """The file's text, or None for what is not searched (special, big, binary, unreadable)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        data = handle.read(MAX_FILE_BYTES + 1)
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def _start(root: Path, path: str) -> str:
    """The project-relative folder to search (`""` for the whole project)."""
    if path in ("", "."):
        return ""
    with walk(root, path) as walked:
        if walked.kind != "dir":
            raise UsageError(f"file-search: {path!r} is not a folder in the project.")
        return walked.rel


def search(root: Path, pattern: str, *, path: str = "", glob: str = "**/*", ignore_case: bool = False,
           limit: int = 100) -> dict[str, Any]:
    program = _program(pattern, ignore_case)
    real_root = Path(os.path.realpath(root))
    start = _start(real_root, path)
    in_glob = glob_matcher(normalize_glob(glob), "file-search")
    ignored = Ignored()
    if start:  # the .gitignore files above the start folder apply too
        parts = start.split("/")
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            try:
                ignored.add(base, (real_root / base / ".gitignore").read_text("utf-8", "replace"))
            except OSError:
                pass
    matches: list[dict[str, Any]] = []
    files = 0
    truncated = False
    top = real_root / start if start else real_root
    for directory, dirs, names, dir_fd in os.fwalk(top, follow_symlinks=False):
        base = os.path.relpath(directory, real_root)
        base = "" if base == "." else base
        if ".gitignore" in names:
            text = _text(dir_fd, ".gitignore")
            if text is not None:
                ignored.add(base, text)
        prefix = f"{base}/" if base else ""
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not ignored(prefix + d, True))
        for name in sorted(names):
            rel = prefix + name
            if ignored(rel, False) or not in_glob(rel):
                continue
            if files >= MAX_FILES:
                return {"matches": matches, "truncated": True, "files": files}
            text = _text(dir_fd, name)
            if text is None:
                continue
            files += 1
            for number, line in enumerate(text.splitlines(), 1):
                if program.search(line) is None:
                    continue
                if len(matches) >= limit:
                    truncated = True
                    break
                shown = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
                matches.append({"path": rel, "line": number, "text": shown})
            if truncated:
                return {"matches": matches, "truncated": True, "files": files}
    return {"matches": matches, "truncated": truncated, "files": files}
