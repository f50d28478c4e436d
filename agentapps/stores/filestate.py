"""The file state backend: one JSON file per key under `.agent-apps/state/`, written atomically
(temp file, fsync, rename, folder fsync) and serialised across processes by the lock file `.lock`,
which is never a data file. A key with a time-to-live carries `expires` (epoch ms) in its file and
reads as absent once that has passed.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import fcntl
import json
import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentapps.core.atomic import cleanup_temp_files, make_private_dirs, read_json
from agentapps.errors import LockTimeoutError, StoreCorruptError, StoreWriteError, UsageError
from agentapps.stores.keys import (
    MISSING,
    SUFFIX,
    check_expect,
    decode_name,
    dump,
    encode_key,
    shown,
    timed_out,
    validate_key,
)


class FileStateStore:
    """One JSON file per key under `root`; writers are serialised by the lock file `root/.lock`.

    Each file holds `{"key": ..., "value": ...}` (and `expires`, epoch ms, with a time-to-live) so
    hashed (long-key) names can still be listed.
    """

    def __init__(self, root: Path, *, lock_timeout: float = 30.0,
                 redact: Callable[[Any], Any] | None = None) -> None:
        self.root = Path(root)
        self.lock_timeout = lock_timeout
        self.redact = redact
        self._folder = _Folder(str(self.root))
        weakref.finalize(self, self._folder.close)
        cleanup_temp_files(self.root)

    def _load(self, key: str, folder: int | None = None, name: str | None = None) -> tuple[bool, Any]:
        name = name or encode_key(key)
        try:
            data = read_state_file(self.root / name) if folder is None else _read_at(folder, name, self.root)
        except FileNotFoundError:
            return False, None
        if not (isinstance(data, dict) and data.get("key") == key and "value" in data
                and isinstance(data.get("expires", 0), int)):
            raise StoreCorruptError(
                f"is not a state file for key {shown(key)}; it was left untouched — "
                "fix it by hand or remove it to start over.",
                file=self.root / name,
            )
        if "expires" in data and data["expires"] <= time.time() * 1000:
            return False, None
        return True, data["value"]

    def get(self, key: str) -> Any | None:
        return self._load(key)[1]

    def set(self, key: str, value: Any, *, expect: Any = MISSING, ttl: float | None = None) -> None:
        name = encode_key(key)
        if expect is not MISSING:
            dump(expect, "expect value")
        record = {"key": key, "value": self.redact(value) if self.redact is not None else value}
        if ttl is not None:
            record["expires"] = int(time.time() * 1000 + ttl * 1000)
        try:
            data = json.dumps(record, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise UsageError(f"State value is not JSON-serialisable ({exc}).") from None
        tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        try:
            # The folder stays open: the temp file, the rename and both fsyncs act through it.
            folder = self._folder.fd()
            _write_new(folder, tmp, data)  # write and fsync outside the lock: the slow part
        except OSError as exc:
            raise _not_saved(key, exc) from None
        try:
            with self._folder.locked(self.lock_timeout):
                # Read even without `expect`: a corrupt file must be reported, not overwritten.
                check_expect(key, self._load(key, folder, name)[1], expect)
                os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
                tmp = ""
            os.fsync(folder)
        except OSError as exc:
            raise _not_saved(key, exc) from None
        finally:
            if tmp:  # the write was refused (a conflict, a corrupt file)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=folder)

    def delete(self, key: str) -> bool:
        name = encode_key(key)
        with self._folder.locked(self.lock_timeout):
            try:
                os.unlink(name, dir_fd=self._folder.fd())
            except FileNotFoundError:
                return False
            return True

    def list(self, prefix: str = "") -> builtins.list[str]:
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        keys = []
        for name in names:
            key = decode_name(name)
            if key is None and "~" in name and not name.startswith(".") and name.endswith(SUFFIX):
                key = self._hashed_key(name)
            if key is not None and key.startswith(prefix):
                keys.append(key)
        return sorted(k for k in keys if self._alive(k))

    def _alive(self, key: str) -> bool:
        """False for a key whose time-to-live has passed (or that was deleted while listing)."""
        try:
            with open(self.root / encode_key(key), "rb") as file:  # `expires` is written last
                file.seek(max(0, os.fstat(file.fileno()).st_size - 40))
                if b'"expires": ' not in file.read():
                    return True
            return self._load(key)[0]
        except (FileNotFoundError, StoreCorruptError):
            return False

    def _hashed_key(self, name: str) -> str | None:
        try:
            data = read_state_file(self.root / name)
        except FileNotFoundError:
            return None  # deleted while listing
        key = data.get("key") if isinstance(data, dict) else None
        try:
            return key if isinstance(key, str) and encode_key(key) == name else None
        except UsageError:
            return None

    async def wait(self, key: str, timeout: float) -> Any:
        """Look at the key's file until it exists: other processes cannot notify a file store."""
        validate_key(key)
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            found, value = self._load(key)
            if found:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise timed_out(key, timeout)
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.1)


def read_state_file(path: Path) -> Any:
    """The JSON in a state or session file; anything that is not one is StoreCorruptError (the
    file is left untouched). FileNotFoundError passes through: a missing file is an absent key."""
    try:
        return read_json(path)
    except IsADirectoryError:
        why = "is a folder, not a data file"
    except RecursionError:
        why = "is nested too deeply to be a data file"
    except (FileNotFoundError, StoreCorruptError):
        raise
    except OSError as exc:
        raise StoreCorruptError(f"cannot be read ({exc.strerror or exc}).", file=path) from None
    raise StoreCorruptError(f"{why}; it was left untouched — remove it to start over.", file=path)


def _read_at(folder: int, name: str, root: Path) -> Any:
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
        return read_state_file(root / name)  # reports it
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


def _write_new(folder: int, name: str, data: bytes) -> None:
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


class _Folder:
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


def _not_saved(key: str, exc: OSError) -> StoreWriteError:
    return StoreWriteError(f"State key {shown(key)} was not saved: {exc.strerror or exc}; its previous "
                           "value is kept. Free some disk space (or fix the folder's permissions) and retry.")


