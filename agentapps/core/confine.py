"""Confinement of user-supplied file paths to the project root (SECURITY.md promise 5).

Paths are walked one component at a time from an open descriptor on the real project root, each
folder opened with O_NOFOLLOW relative to the one before, and symlinks expanded by hand (their
targets checked like any user path). The walk ends holding an open descriptor on the folder that
contains the final name, so an operation done relative to it (`dir_fd=`) acts on exactly the
folder that was checked: a folder swapped for a symlink after the walk cannot redirect it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from agentapps.errors import DeniedError, UsageError

PROTECTED_FOR_WRITE = (".agent-apps", ".git")
SYSTEM_TREES = ("/proc", "/dev", "/sys")
MAX_SYMLINKS = 40  # the kernel's own limit for one lookup
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _deny(user_path: str, why: str) -> DeniedError:
    # repr() keeps the message on one line even for names with newlines or NUL bytes.
    return DeniedError(f"Refused path {user_path!r}: {why}.")


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


@dataclass
class Walked:
    """A resolved path: `parts` relative to the real root (symlinks expanded, no `.` or `..`),
    `dir_fd` open on the deepest existing folder on the way (the final name's parent when the
    parent exists), and what the final name is (`kind`: "dir", "file", "special" or "missing")."""

    root: Path
    parts: tuple[str, ...]
    dir_fd: int
    kind: str
    missing: int = 0  # trailing parts that do not exist (yet)
    _fds: list[int] = field(default_factory=list, repr=False)

    @property
    def rel(self) -> str:
        """The project-relative POSIX path ("." for the root itself)."""
        return "/".join(self.parts) or "."

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else "."

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.pop())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class _Walker:
    def __init__(self, root: Path, user_path: str) -> None:
        self.user_path = user_path
        self.given_root = os.path.abspath(root)
        self.real_root = os.path.realpath(root)
        self.links = 0
        self.fds: list[int] = [os.open(self.real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        self.names: list[str] = []
        self.pending: list[str] = []  # missing components, resolved lexically

    def _inside(self, absolute: str, what: str) -> list[str]:
        """The components of an absolute path relative to the project root, or a refusal."""
        for top in (self.real_root, self.given_root):
            if _under(absolute, top):
                return absolute[len(top):].split("/")
        real = os.path.realpath(absolute)  # e.g. the root spelled through a symlinked parent
        if _under(real, self.real_root):
            return real[len(self.real_root):].split("/")
        if any(_under(real, tree) or _under(absolute, tree) for tree in SYSTEM_TREES):
            raise _deny(self.user_path, f"{what} {real}, a system path")
        raise _deny(self.user_path, f"{what} {real}, outside the project {self.real_root}")

    def _restart_at_root(self) -> None:
        while len(self.fds) > 1:
            os.close(self.fds.pop())
        self.names.clear()
        self.pending.clear()

    def _follow(self, name: str, todo: deque[str]) -> None:
        self.links += 1
        if self.links > MAX_SYMLINKS:
            raise _deny(self.user_path, "it contains a symlink loop")
        target = os.readlink(name, dir_fd=self.fds[-1])
        if not target:
            raise _deny(self.user_path, "it contains an empty symlink")
        if target.startswith("/"):
            shown = os.path.join(self.real_root, *self.names, name)
            parts = self._inside(target, f"the symlink {shown} leads to")
            self._restart_at_root()
        else:
            parts = target.split("/")
        todo.extendleft(reversed(parts))

    def _up(self) -> None:
        if self.pending:
            self.pending.pop()
        elif self.names:
            self.names.pop()
            os.close(self.fds.pop())
        else:
            raise _deny(self.user_path, f"it leads above the project root {self.real_root}, outside the project")

    def _enter(self, name: str, todo: deque[str]) -> bool:
        """Open folder `name`; False when it is a symlink (expanded into `todo`) or missing."""
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fds[-1])
        except FileNotFoundError:
            self.pending.append(name)
            return False
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            info = os.stat(name, dir_fd=self.fds[-1], follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                self._follow(name, todo)
                return False
            raise UsageError(f"Path {self.user_path!r}: {'/'.join([*self.names, name])} is not a folder.") from None
        self.fds.append(fd)
        self.names.append(name)
        return True

    def walk(self) -> Walked:
        user_path = self.user_path
        if not user_path or not user_path.strip():
            raise _deny(user_path, "the path is empty")
        if "\x00" in user_path:
            raise _deny(user_path, "the path contains a NUL byte")
        parts = self._inside(user_path, "it resolves to") if user_path.startswith("/") else user_path.split("/")
        todo: deque[str] = deque(parts)
        kind = "dir"
        while todo:
            part = todo.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                self._up()
                continue
            if self.pending:
                self.pending.append(part)
                continue
            if any(p not in ("", ".") for p in todo):  # more to come: it must be a folder
                self._enter(part, todo)
                continue
            try:
                info = os.stat(part, dir_fd=self.fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                self.pending.append(part)
                continue
            if stat.S_ISLNK(info.st_mode):
                self._follow(part, todo)
            elif stat.S_ISDIR(info.st_mode):
                self._enter(part, todo)
            else:
                kind = "file" if stat.S_ISREG(info.st_mode) else "special"
                self.names.append(part)
        if self.pending:
            kind = "missing"
        names = tuple(self.names + self.pending)
        # the final name's folder: for a folder that was entered, the one before it
        dir_fd = self.fds[-2] if kind == "dir" and self.names else self.fds[-1]
        return Walked(Path(self.real_root), names, dir_fd, kind, len(self.pending), self.fds)


def walk(root: Path, user_path: str) -> Walked:
    """Resolve `user_path` (relative to `root`, or absolute into it) without following any symlink
    that the walk has not checked; the caller closes the result (it is a context manager)."""
    walker = _Walker(root, user_path)
    try:
        return walker.walk()
    except OSError as exc:
        for fd in walker.fds:
            os.close(fd)
        if exc.errno == errno.ELOOP:
            raise _deny(user_path, "it contains a symlink loop") from None
        raise UsageError(f"Path {user_path!r}: {exc.strerror}.") from None
    except BaseException:
        for fd in walker.fds:
            os.close(fd)
        raise


def make_parents(walked: Walked, user_path: str) -> int:
    """Create the missing folders before the final name (mode 0o777 less the umask) and return
    a descriptor on its parent; a name that turns into anything but a folder meanwhile is refused."""
    for name in walked.parts[len(walked.parts) - walked.missing : -1]:
        try:
            os.mkdir(name, dir_fd=walked.dir_fd)
        except FileExistsError:
            pass  # another writer made it: it is opened without following symlinks below
        try:
            walked.dir_fd = os.open(name, _DIR_FLAGS, dir_fd=walked.dir_fd)
        except OSError:
            raise _deny(user_path, f"the folder {name!r} changed while it was being created") from None
        walked._fds.append(walked.dir_fd)
    walked.missing = min(walked.missing, 1)
    return walked.dir_fd


def check_target(walked: Walked, user_path: str, *, for_write: bool) -> None:
    """Refuse devices, fifos and sockets, and writes to the root or into protected folders."""
    if walked.kind == "special":
        raise _deny(user_path, "it is not a regular file or directory (device, fifo or socket)")
    if for_write:
        if not walked.parts:
            raise _deny(user_path, "it is the project root itself")
        if walked.parts[0] in PROTECTED_FOR_WRITE:
            raise _deny(user_path, f"it is inside protected folder {walked.parts[0]}/")


def project_relative(root: Path, user_path: str, *, for_write: bool = False) -> str:
    """The project-relative POSIX path `user_path` names, as the file skills would resolve it."""
    with walk(root, user_path) as walked:
        check_target(walked, user_path, for_write=for_write)
        return walked.rel


def resolve_in_project(root: Path, user_path: str, *, for_write: bool = False) -> Path:
    """Return the real absolute path of `user_path` (relative to `root`) or raise DeniedError.

    Nothing is decoded or expanded: `~` and `%2e%2e` are literal names. Symlinks are resolved
    at every component (dangling ones to their target), and the result must lie inside the
    real project root. Reads need a regular file or directory (or a missing path, which the
    caller reports); writes also refuse `.agent-apps/` and `.git/` at the project root.
    A path returned here can change before it is used: operations open through `walk`.
    """
    with walk(root, user_path) as walked:
        check_target(walked, user_path, for_write=for_write)
        return walked.path
