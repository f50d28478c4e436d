"""Confinement of user-supplied file paths to the project root (SECURITY.md promise 5)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from agentapps.errors import DeniedError

PROTECTED_FOR_WRITE = (".agent-apps", ".git")
SYSTEM_TREES = (Path("/proc"), Path("/dev"), Path("/sys"))


def _deny(user_path: str, why: str) -> DeniedError:
    # repr() keeps the message on one line even for names with newlines or NUL bytes.
    return DeniedError(f"Refused path {user_path!r}: {why}.")


def resolve_in_project(root: Path, user_path: str, *, for_write: bool = False) -> Path:
    """Return the real absolute path of `user_path` (relative to `root`) or raise DeniedError.

    Nothing is decoded or expanded: `~` and `%2e%2e` are literal names. Symlinks are resolved
    at every component (dangling ones to their target), and the result must lie inside the
    real project root. Reads need a regular file or directory (or a missing path, which the
    caller reports); writes also refuse `.agent-apps/` and `.git/` at the project root.
    """
    if not user_path or not user_path.strip():
        raise _deny(user_path, "the path is empty")
    if "\x00" in user_path:
        raise _deny(user_path, "the path contains a NUL byte")
    real_root = Path(os.path.realpath(root))
    candidate = Path(user_path)
    if not candidate.is_absolute():
        candidate = real_root / candidate
    # realpath resolves symlinks before applying '..', and missing tails lexically; that is
    # exactly what a not-yet-existing write target needs.
    real = Path(os.path.realpath(candidate))
    if any(real.is_relative_to(tree) for tree in SYSTEM_TREES):
        raise _deny(user_path, f"it resolves to {real}, a system path")
    if not real.is_relative_to(real_root):
        raise _deny(user_path, f"it resolves to {real}, outside the project {real_root}")
    try:
        info: os.stat_result | None = os.stat(real)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _deny(user_path, "it contains a symlink loop") from None
        info = None  # missing (yet): the caller reports it, or creates it when writing
    if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise _deny(user_path, "it is not a regular file or directory (device, fifo or socket)")
    if for_write:
        parts = real.relative_to(real_root).parts
        if not parts:
            raise _deny(user_path, "it is the project root itself")
        if parts[0] in PROTECTED_FOR_WRITE:
            raise _deny(user_path, f"it is inside protected folder {parts[0]}/")
    return real
