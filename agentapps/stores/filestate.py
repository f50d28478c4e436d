"""The file state backend: one JSON file per key under `.agent-apps/state/`, written atomically
(temp file, fsync, rename, folder fsync) and serialised across processes by the lock file `.lock`,
which is never a data file. A key with a time-to-live carries `expires` (epoch ms) in its file and
reads as absent once that has passed.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import secrets
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentapps.core.atomic import cleanup_temp_files, read_json, require_folder, require_inside
from agentapps.errors import StoreCorruptError, StoreWriteError, UsageError
from agentapps.stores.folder import StoreFolder, read_at, write_new
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
        require_folder(self.root)
        require_inside(self.root.parent, self.root)  # e.g. `.agent-apps/sessions` committed as a symlink
        self._folder = StoreFolder(str(self.root))
        weakref.finalize(self, self._folder.close)
        cleanup_temp_files(self.root)

    def _load(self, key: str, folder: int | None = None, name: str | None = None) -> tuple[bool, Any]:
        name = name or encode_key(key)
        try:
            data = read_state_file(self.root / name) if folder is None else read_at(folder, name, self.root)
        except FileNotFoundError:
            return False, None
        except IsADirectoryError:
            data = read_state_file(self.root / name)  # says so, as StoreCorruptError
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
            write_new(folder, tmp, data)  # write and fsync outside the lock: the slow part
        except OSError as exc:
            raise _not_saved(key, exc, self._had(name)) from None
        try:
            with self._folder.locked(self.lock_timeout):
                # Read even without `expect`: a corrupt file must be reported, not overwritten.
                check_expect(key, self._load(key, folder, name)[1], expect)
                os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
                tmp = ""
            os.fsync(folder)
        except OSError as exc:
            raise _not_saved(key, exc, self._had(name)) from None
        finally:
            if tmp:  # the write was refused (a conflict, a corrupt file)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=folder)

    def _had(self, name: str) -> bool:
        """Whether the key has a file, whose value a failed write leaves as it was (so said)."""
        try:
            os.stat(name, dir_fd=self._folder.fd())
        except FileNotFoundError:
            return False
        except OSError:
            return True  # cannot tell: never claim it had none
        return True

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


def _not_saved(key: str, exc: OSError, had: bool) -> StoreWriteError:
    kept = "its previous value is kept" if had else "it stays unset"
    return StoreWriteError(f"State key {shown(key)} was not saved: {exc.strerror or exc}; {kept}. Free "
                           "some disk space (or fix the folder's permissions) and retry.")


