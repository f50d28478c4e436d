"""Crash-safe file primitives: atomic writes, stray temp cleanup, an inter-process lock, JSON reads."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from agentapps.errors import LockTimeoutError, StoreCorruptError

_DIR_MODE = 0o700
# What `Path.exists()` takes for "not there": missing, under a file, a dangling or looping symlink.
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def _make_dirs(directory: Path) -> None:
    """Create `directory` and any missing ancestors, each with mode 0o700 (umask ignored)."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=_DIR_MODE)
        except FileExistsError:
            continue  # another writer created it first
        os.chmod(path, _DIR_MODE)


def make_private_dirs(directory: Path) -> None:
    """Create `directory` and any missing ancestors, each with mode 0o700 (umask ignored)."""
    require_folder(directory)
    _make_dirs(directory)


def require_folder(directory: Path) -> None:
    """Refuse, with a clear error naming it, a file standing where `directory` or one of its
    ancestors must be a folder (`.agent-apps/state` made by hand as a file)."""
    current = Path(directory)
    while True:
        # One stat per path decides: `is_dir()` then `exists()` took two, and a folder another
        # process made between them was reported as a file.
        try:
            mode = os.stat(current).st_mode
        except OSError as exc:
            if exc.errno not in _ABSENT:
                return  # unreadable: the operation itself reports it
        else:
            if not stat.S_ISDIR(mode):
                raise StoreCorruptError(f"is a file where agentapps keeps a folder ({directory}); it was left "
                                        "untouched — move or remove it.", file=current)
            return
        if current.parent == current:
            return
        current = current.parent


def require_inside(data_dir: Path, path: Path) -> None:
    """Refuse `path` (a file agentapps keeps under `data_dir`, `.agent-apps/`) when a symlink makes
    it land outside the folder that holds `data_dir` (the project): a checkout can commit
    `.agent-apps/trust.log` or `.agent-apps/runs` as a symlink to any file of the machine."""
    base = os.path.realpath(data_dir.parent)
    real = os.path.realpath(path)
    if os.path.commonpath([base, real]) != base:
        raise StoreCorruptError(f"leads out of {data_dir.parent} through a symlink (to {real}); it was left "
                                "untouched and nothing was written there — remove the symlink.", file=path)


def _fsync_fd(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some file systems cannot fsync a directory; the rename is still atomic there.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _fsync_fd(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes, mode: int) -> None:
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_name(name: str) -> str:
    # Keep the temp name within NAME_MAX even for long target names.
    return f".{name[:200]}.{os.urandom(6).hex()}.tmp"


def stage(path: Path, data: bytes, *, mode: int = 0o600) -> Path:
    """Write `data` durably to a temp file beside `path` (the slow part); `commit` puts it in place."""
    path = Path(path)
    _make_dirs(path.parent)
    tmp = path.parent / _temp_name(path.name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        _write_all(fd, data, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write_atomic_at(dir_fd: int, name: str, data: bytes, *, mode: int = 0o600) -> None:
    """`write_atomic` of `name` inside the folder open as `dir_fd`: the temp file is created and
    renamed relative to that descriptor, so the write lands in that very folder even if its path
    is swapped for a symlink meanwhile."""
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        _write_all(fd, data, mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    _fsync_fd(dir_fd)


def commit(tmp: Path, path: Path, *, sync_dir: bool = True) -> None:
    """Atomically replace `path` with a staged temp file (callers may sync the folder later)."""
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        _fsync_dir(Path(path).parent)


def sync_dir(directory: Path) -> None:
    _fsync_dir(Path(directory))


def write_atomic(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new bytes, never a mix."""
    commit(stage(path, data, mode=mode), Path(path))


def cleanup_temp_files(directory: Path, older_than: float = 60.0) -> int:
    """Remove `.*.tmp` files left in `directory` by killed writers; return how many were removed.

    Only files older than `older_than` seconds go, so a live writer's temp file survives.
    """
    directory = Path(directory)
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    cutoff = time.time() - older_than
    removed = 0
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or entry.stat().st_mtime > cutoff:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue  # someone else cleaned it up or the writer renamed it
        removed += 1
    return removed


class FileLock:
    """An exclusive `flock` on a dedicated lock file (never the data file, which gets replaced).

    Each acquisition opens its own descriptor, so threads of one process exclude each other too.

    Ours rather than the `filelock` library (issue 20 weighed it, 4.3.1 on Python 3.11): filelock
    does the same `flock` under 15,700 lines in 60 modules, takes 80-115 ms to import (a run
    that writes state would pay it) and 434 us per uncontended acquire and release against 24 us
    here; its default wait between tries is 50 ms against 1-5 ms here. What it adds (a soft-lock
    fallback where `flock` is missing, read-write and SQLite locks, Windows) is not needed on
    the POSIX systems agentapps supports, where these 40 lines already keep the lock file in
    place and raise LockTimeoutError.
    """

    def __init__(self, path: Path, timeout: float = 30.0, poll: float = 0.005) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.poll = poll
        self._held = threading.local()

    def acquire(self) -> None:
        _make_dirs(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + self.timeout
        delay = min(0.001, self.poll)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeoutError(
                        f"Could not take the lock {self.path} within {self.timeout:g} s; another "
                        "agentapps process holds it — wait for it to finish or stop it, then retry."
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, self.poll)
            except BaseException:
                os.close(fd)
                raise
        stack: list[int] = getattr(self._held, "fds", [])
        stack.append(fd)
        self._held.fds = stack

    def release(self) -> None:
        fd = self._held.fds.pop()
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def read_json(path: Path) -> Any:
    """Parse the JSON file at `path`; a corrupt file is reported and left exactly as it is."""
    data = Path(path).read_bytes()
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreCorruptError(
            f"is not valid JSON ({exc}); the file was left untouched — fix the JSON by hand "
            "or remove the file to start over.",
            file=path,
        ) from None
