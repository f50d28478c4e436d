"""file-read / file-write / file-list: project-relative paths, no-follow walks, caps, atomic writes.

Every operation resolves its path with `confine.walk` and then acts relative to the folder
descriptor the walk holds, so nothing checked can be swapped between the check and the use. When
`expect` is given (the path a permission check approved) the operation refuses to act anywhere else.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentapps.core.atomic import write_atomic_at
from agentapps.core.confine import Walked, check_target, make_parents, walk
from agentapps.errors import ArgsError, DeniedError, LimitError, SkillError, UsageError
from agentapps.files.text import read_lines

MAX_READ_BYTES = 256 * 1024
MAX_WRITE_BYTES = 10 * 1024 * 1024
MAX_APPEND_TOTAL = 64 * 1024 * 1024  # append copies the old bytes into the new version
SKIP_DIRS = frozenset({".git", ".agent-apps", "node_modules", ".venv", "__pycache__"})
ATTEMPTS = 3  # a final name that turns into a symlink between the walk and the open: walk again


class _Raced(Exception):
    pass


def _changed(user_path: str, why: str) -> DeniedError:
    return DeniedError(f"Refused path {user_path!r}: {why}.")


def _walk_checked(root: Path, user_path: str, expect: str | None, *, for_write: bool) -> Walked:
    walked = walk(root, user_path)
    try:
        check_target(walked, user_path, for_write=for_write)
        if expect is not None and walked.rel != expect:
            raise _changed(user_path, f"it now resolves to {walked.rel}, not {expect} as when it was allowed")
    except BaseException:
        walked.close()
        raise
    return walked


def _open_final(walked: Walked, flags: int) -> int:
    try:
        return os.open(walked.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=walked.dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOENT):
            raise _Raced from None  # replaced by a symlink or removed since the walk
        raise


def read_text(root: Path, user_path: str, *, offset: int = 0, limit: int | None = None,
              max_bytes: int = MAX_READ_BYTES, expect: str | None = None,
              label: str = "file-read", where: str = "in the project") -> str:
    """Lines `offset`.. (0-based) of a text file, at most `limit` lines and `max_bytes` bytes.
    `label` and `where` word the errors (skill-file reads a skill's folder the same way)."""
    for _ in range(ATTEMPTS):
        with _walk_checked(root, user_path, expect, for_write=False) as walked:
            if walked.kind == "missing":
                raise UsageError(f"{label}: no such file {user_path!r} {where}.")
            if walked.kind == "dir":
                raise UsageError(f"{label}: {user_path!r} is a folder; use file-list."
                                 if label == "file-read" else f"{label}: {user_path!r} is a folder.")
            try:
                fd = _open_final(walked, os.O_RDONLY | os.O_NONBLOCK)
            except _Raced:
                continue
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise _changed(user_path, "it is not a regular file (device, fifo or socket)")
                return read_lines(handle, user_path, offset=offset, limit=limit, max_bytes=max_bytes)
    raise _changed(user_path, "it kept changing while being opened")


def _old_bytes(walked: Walked, append: bool) -> tuple[int, bytes]:
    """The existing file's mode, and its bytes when appending (a new file: 0o644, nothing)."""
    if walked.kind == "missing":
        return 0o644, b""
    fd = _open_final(walked, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _changed(walked.rel, "it is not a regular file (device, fifo or socket)")
        if not append:
            return stat.S_IMODE(info.st_mode), b""
        if info.st_size > MAX_APPEND_TOTAL:
            raise LimitError(f"file-write: appending to {walked.rel} ({info.st_size} bytes) would pass "
                             f"the {MAX_APPEND_TOTAL // (1024 * 1024)} MiB limit for appends.")
        return stat.S_IMODE(info.st_mode), handle.read(MAX_APPEND_TOTAL + 1)


def write_text(root: Path, user_path: str, content: str, *, append: bool = False,
               expect: str | None = None) -> dict[str, Any]:
    data = content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise LimitError(f"file-write: {len(data)} bytes is over the {MAX_WRITE_BYTES // (1024 * 1024)} MiB limit.")
    for _ in range(ATTEMPTS):
        with _walk_checked(root, user_path, expect, for_write=True) as walked:
            if walked.kind == "dir":
                raise UsageError(f"file-write: {user_path!r} is a folder.")
            dir_fd = make_parents(walked, user_path)
            try:
                mode, old = _old_bytes(walked, append)
            except _Raced:
                continue
            if len(old) + len(data) > MAX_APPEND_TOTAL:
                raise LimitError(f"file-write: {walked.rel} would grow past {MAX_APPEND_TOTAL // (1024 * 1024)} MiB.")
            try:
                write_atomic_at(dir_fd, walked.name, old + data, mode=mode)
            except FileNotFoundError:
                continue  # the folder was removed after the walk: walk again
            except OSError as exc:
                raise SkillError(f"file-write: cannot write {walked.rel}: {exc.strerror}.") from None
            return {"path": walked.rel, "bytes": len(old) + len(data)}
    raise _changed(user_path, "it kept changing while being written")


def normalize_glob(pattern: str) -> str:
    """`./docs//*.md` -> `docs/*.md`: the spelling file-list matches with (paths never hold them)."""
    parts = [p for p in pattern.strip().split("/") if p not in ("", ".")]
    return "/".join(parts) or "**/*"


def glob_matcher(pattern: str, tool: str = "file-list") -> Callable[[str], bool]:
    """Whether a project-relative file path matches `pattern`, read as one `.gitignore` line is,
    by the pathspec library: `*` and `?` stay within a folder, `**` crosses folders (`a/**/b`
    includes `a/b`), a glob without `/` matches at any depth (`*.py`), one with `/` is anchored at
    the project root (`src/*.py`), and a glob naming a folder matches the files under it. RE2 runs
    it, so a glob a model writes matches in time linear in the path."""
    if pattern == "**/*":
        return lambda rel: True  # the default: no library import for it
    import re
    import warnings

    import re2
    from pathspec import PathSpec

    # `#` and `!` would start a comment or a negation in a .gitignore line: here they are characters
    line = "\\" + pattern if pattern[:1] in ("#", "!") else pattern
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pathspec compiles `[[` with `re`, which warns
        try:
            spec = PathSpec.from_lines("gitignore", [line])
        except (ValueError, re.error, re2.error):
            raise ArgsError(f"{tool}: the glob {pattern!r} cannot be read (a range such as [z-a], a trailing "
                            "backslash?); `*`, `?`, `[abc]` and `**` are what it takes.") from None
    return spec.match_file


def _listed(real_root: Path, rel: str, dir_fd: int, name: str) -> bool:
    """A regular file, or a symlink that leads to one inside the project."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    if stat.S_ISREG(info.st_mode):
        return True
    if not stat.S_ISLNK(info.st_mode):
        return False
    try:
        with walk(real_root, rel) as walked:
            return walked.kind == "file"
    except (DeniedError, UsageError):
        return False  # a symlink that leads out of the project


def list_files(root: Path, pattern: str = "**/*", *, limit: int = 1000) -> list[str]:
    real_root = Path(os.path.realpath(root))
    matches = glob_matcher(normalize_glob(pattern))
    found: list[str] = []
    # fwalk descends through folder descriptors without following symlinks: a folder swapped for
    # a symlink mid-walk is not entered.
    for directory, dirs, files, dir_fd in os.fwalk(real_root, follow_symlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        base = os.path.relpath(directory, real_root)
        for name in sorted(files):
            rel = name if base == "." else f"{base}/{name}"
            if not matches(rel):
                continue
            if not _listed(real_root, rel, dir_fd, name):
                continue
            found.append(rel)
            if len(found) >= limit:
                return found
    return found
