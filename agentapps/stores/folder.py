"""A store's folder kept open between writes: its lock file (flock, never a data file), and
reads and atomic writes relative to the open folder, so a write never lands in a deleted folder.

The lock is our own `flock`, not the `filelock` library (issue 20 weighed it): filelock takes a
path, while this lock file is opened relative to the store's open folder (`dir_fd`), so a folder
swapped for a symlink cannot redirect it, and it is reopened when it was removed while a writer
waited (`st_nlink == 0`); filelock offers neither. See core/atomic.py for its measured costs."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentapps.core.atomic import make_private_dirs
from agentapps.errors import LockTimeoutError, StoreCorruptError


def read_at(folder: int, name: str, root: Path) -> Any:
    """`read_state_file` of `name` in the folder open as `folder`."""
    try:  # no access-time update: it would add inode metadata to the next fsync
        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOATIME, dir_fd=folder)
    except PermissionError:  # O_NOATIME needs us to own the file
        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=folder)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        raw = b"".join(chunks)
    except IsADirectoryError:
        raise IsADirectoryError(name) from None  # the caller reports it
    finally:
        os.close(fd)
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreCorruptError(f"is not valid JSON ({exc}); the file was left untouched — fix the JSON by hand "
                                "or remove the file to start over.", file=root / name) from None
    except RecursionError:
        raise StoreCorruptError("is nested too deeply to be a data file; it was left untouched — remove it "
                                "to start over.", file=root / name) from None


def write_new(folder: int, name: str, data: bytes) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder)
        raise
    os.close(fd)


class StoreFolder:
    """The store's folder and its lock file, kept open between writes (reopened if either was
    removed meanwhile, so a write never lands in a deleted folder or locks a deleted file).

    Threads of this process take `mutex` first; processes exclude each other with `flock` on
    `.lock`, a file that is never a data file and never replaced.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.mutex = threading.Lock()
        self._dir: int | None = None
        self._lock: int | None = None

    def fd(self) -> int:
        if self._dir is not None and os.fstat(self._dir).st_nlink > 0:
            return self._dir
        if self._dir is not None:
            os.close(self._dir)
            self._dir = None
        make_private_dirs(Path(self.root))
        self._dir = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return self._dir

    def _lock_fd(self) -> int:
        if self._lock is not None and os.fstat(self._lock).st_nlink > 0:
            return self._lock
        if self._lock is not None:
            os.close(self._lock)
        self._lock = os.open(".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600, dir_fd=self.fd())
        return self._lock

    @contextlib.contextmanager
    def locked(self, timeout: float) -> Iterator[None]:
        deadline = time.monotonic() + timeout
        if not self.mutex.acquire(timeout=timeout):
            raise _lock_timeout(self.root, timeout)
        try:
            delay = 0.001
            while True:
                fd = self._lock_fd()
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise _lock_timeout(self.root, timeout) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.005)
                    continue
                if os.fstat(fd).st_nlink > 0:
                    break
                fcntl.flock(fd, fcntl.LOCK_UN)  # the lock file was removed while we waited: lock the new one
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self.mutex.release()

    def close(self) -> None:
        for fd in (self._dir, self._lock):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._dir = self._lock = None


def _lock_timeout(root: str, timeout: float) -> LockTimeoutError:
    return LockTimeoutError(f"Could not take the lock {root}/.lock within {timeout:g} s; another agentapps "
                            "process holds it — wait for it to finish or stop it, then retry.")
