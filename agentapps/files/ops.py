"""file-read / file-write / file-list: project-relative paths, real-path confinement, caps, atomic writes."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from agentapps.core.atomic import write_atomic
from agentapps.core.confine import resolve_in_project
from agentapps.errors import LimitError, UsageError

MAX_READ_BYTES = 256 * 1024
MAX_WRITE_BYTES = 10 * 1024 * 1024
SKIP_DIRS = frozenset({".git", ".agent-apps", "node_modules", ".venv", "__pycache__"})


def read_text(root: Path, user_path: str, *, offset: int = 0, limit: int | None = None,
              max_bytes: int = MAX_READ_BYTES) -> str:
    """Lines `offset`.. (0-based) of a text file, at most `limit` lines and `max_bytes` bytes."""
    path = resolve_in_project(root, user_path)
    if not path.exists():
        raise UsageError(f"file-read: no such file {user_path!r} in the project.")
    if path.is_dir():
        raise UsageError(f"file-read: {user_path!r} is a folder; use file-list.")
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(min(size, 8192))
        if b"\x00" in head:
            return f"[binary file {user_path}, {size} bytes: not shown]"
        handle.seek(0)
        lines: list[str] = []
        used = 0
        truncated = False
        long_line: tuple[int, int] | None = None  # (0-based number, bytes) of a line alone over the cap
        for number, (raw, length) in enumerate(_lines(handle, max_bytes)):
            if number < offset:
                continue
            if limit is not None and len(lines) >= limit:
                truncated = True
                break
            if used + length > max_bytes:
                truncated = True
                if not lines:  # showing nothing would leave the reader stuck at this offset
                    lines.append(raw[:max_bytes].decode("utf-8", errors="replace"))
                    long_line = (number, length)
                break
            used += length
            lines.append(raw.decode("utf-8", errors="replace"))
    text = "".join(lines)
    if long_line is not None:
        number, length = long_line
        text += (f"\n[... truncated: line {number + 1} of {user_path} is {length} bytes long; showed only its "
                 f"first {max_bytes} bytes. Read the next line with offset={number + 1}.]\n")
    elif truncated:
        last = offset + len(lines)
        text += (f"\n[... truncated: {user_path} is {size} bytes; showed lines {offset + 1}-{last}. "
                 f"Read on with offset={last}.]\n")
    return text


def _lines(handle: BinaryIO, cap: int) -> Iterator[tuple[bytes, int]]:
    """Each line as (at most its first `cap` + 1 bytes, its length): a huge line is never held whole."""
    while raw := handle.readline(cap + 1):
        length = len(raw)
        if length > cap and not raw.endswith(b"\n"):
            while rest := handle.readline(1 << 20):
                length += len(rest)
                if rest.endswith(b"\n"):
                    break
        yield raw, length


def write_text(root: Path, user_path: str, content: str, *, append: bool = False) -> dict[str, Any]:
    data = content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise LimitError(f"file-write: {len(data)} bytes is over the {MAX_WRITE_BYTES // (1024 * 1024)} MiB limit.")
    path = resolve_in_project(root, user_path, for_write=True)
    if path.is_dir():
        raise UsageError(f"file-write: {user_path!r} is a folder.")
    mode = 0o644
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        if append:
            data = path.read_bytes() + data
    path.parent.mkdir(parents=True, exist_ok=True)
    resolve_in_project(root, user_path, for_write=True)  # the folders we just made must not be a way out
    write_atomic(path, data, mode=mode)
    return {"path": str(path.relative_to(Path(os.path.realpath(root)))), "bytes": len(data)}


def list_files(root: Path, pattern: str = "**/*", *, limit: int = 1000) -> list[str]:
    real_root = Path(os.path.realpath(root))
    found: list[str] = []
    for directory, dirs, files in os.walk(real_root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not os.path.islink(os.path.join(directory, d)))
        for name in sorted(files):
            full = Path(directory, name)
            rel = full.relative_to(real_root).as_posix()
            if not (fnmatch.fnmatch(rel, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(rel, pattern[3:]))):
                continue
            if not Path(os.path.realpath(full)).is_relative_to(real_root):
                continue  # a symlink that leads out of the project
            found.append(rel)
            if len(found) >= limit:
                return found
    return found
