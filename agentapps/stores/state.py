"""The key-value state store: key validation and encoding, and the memory and file backends.

The file backend writes values with declared secrets redacted (the process's `Redactor`); a write
that fails (disk full, read-only folder) raises StoreWriteError naming the key and leaves the old
file as it was; a file that is not a state file (bad JSON, nested too deep, a folder) is reported
with StoreCorruptError and left untouched.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import unquote_to_bytes

from agentapps.core.atomic import FileLock, cleanup_temp_files, commit, read_json, stage, sync_dir
from agentapps.errors import (
    ConflictError,
    LimitError,
    StoreCorruptError,
    StoreWriteError,
    UsageError,
)

if TYPE_CHECKING:
    from agentapps.context.context import Internals

MAX_KEY_CHARS: Final = 256
_MISSING: Final[Any] = object()
_SAFE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SUFFIX: Final = ".json"
# Longer encoded names are shortened and hashed so file names stay well under NAME_MAX (255).
_MAX_STEM: Final = 200
_HASHED_PREFIX: Final = 150


class StateStore(Protocol):
    """What the state skills need from a backend."""

    def get(self, key: str) -> Any | None: ...
    def set(self, key: str, value: Any, *, expect: Any = _MISSING) -> None: ...
    def delete(self, key: str) -> bool: ...
    def list(self, prefix: str = "") -> builtins.list[str]: ...
    def wait(self, key: str, timeout: float, poll: float = 0.05) -> Any: ...


def _shown(key: str) -> str:
    return repr(key if len(key) <= 60 else key[:57] + "...")


def validate_key(key: object) -> str:
    """Return `key` if it is a usable state key, else raise UsageError saying what is wrong."""
    if not isinstance(key, str):
        raise UsageError(f"State key must be a string, not {type(key).__name__}.")
    if not 1 <= len(key) <= MAX_KEY_CHARS:
        raise UsageError(f"State key {_shown(key)} must be 1-{MAX_KEY_CHARS} characters long.")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in key):
        raise UsageError(f"State key {_shown(key)} contains a control character; remove it.")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"State key {_shown(key)} is not valid Unicode text.") from None
    return key


def encode_key(key: str) -> str:
    """Map a key to a file name made only of `[A-Za-z0-9._%~-]`, never starting with '.'."""
    parts = []
    for i, char in enumerate(validate_key(key)):
        if char in _SAFE and not (i == 0 and char == "."):
            parts.append(char)
        else:
            parts.append("".join(f"%{b:02X}" for b in char.encode("utf-8")))
    stem = "".join(parts)
    if len(stem) > _MAX_STEM:
        cut = _HASHED_PREFIX
        while "%" in stem[cut - 2 : cut]:  # do not split a %XX escape
            cut -= 1
        stem = f"{stem[:cut]}~{hashlib.sha256(key.encode('utf-8')).hexdigest()[:32]}"
    return stem + _SUFFIX


def decode_name(name: str) -> str | None:
    """The key stored under file `name`, or None if the name is not a plain encoded key."""
    if not name.endswith(_SUFFIX) or "~" in name or name.startswith("."):
        return None
    raw = unquote_to_bytes(name[: -len(_SUFFIX)])
    try:
        key = raw.decode("utf-8")
        return key if encode_key(key) == name else None
    except (UnicodeDecodeError, UsageError):
        return None


def _dump(value: Any, what: str = "value") -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"State {what} is not JSON-serialisable ({exc}).") from None


def _numbers_as_json(value: Any) -> Any:
    """JSON has one number type: make 1.0 compare equal to 1 (but keep true distinct from 1)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _numbers_as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_as_json(v) for v in value]
    return value


def _check_expect(key: str, current: Any | None, expect: Any) -> None:
    if expect is _MISSING:
        return
    if _dump(_numbers_as_json(current)) != _dump(_numbers_as_json(expect), "expect value"):
        raise ConflictError(
            f"State key {_shown(key)} changed since it was read (expected {_dump(expect)[:60]}); "
            "read it again and retry."
        )


def _timed_out(key: str, timeout: float) -> LimitError:
    return LimitError(
        f"Timed out after {timeout:g} s waiting for state key {_shown(key)}; "
        "raise the timeout or check that something sets the key."
    )


class MemoryStateStore:
    """Process-lifetime state; values are stored as JSON text, so callers get fresh copies."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._changed = threading.Condition()

    def get(self, key: str) -> Any | None:
        text = self._data.get(validate_key(key))
        return None if text is None else json.loads(text)

    def set(self, key: str, value: Any, *, expect: Any = _MISSING) -> None:
        text = _dump(value)
        with self._changed:
            _check_expect(key, self.get(key), expect)
            self._data[key] = text
            self._changed.notify_all()

    def delete(self, key: str) -> bool:
        with self._changed:
            return self._data.pop(validate_key(key), None) is not None

    def list(self, prefix: str = "") -> builtins.list[str]:
        with self._changed:
            return sorted(k for k in self._data if k.startswith(prefix))

    def wait(self, key: str, timeout: float, poll: float = 0.05) -> Any:
        validate_key(key)
        with self._changed:
            if not self._changed.wait_for(lambda: key in self._data, timeout=timeout):
                raise _timed_out(key, timeout)
            return json.loads(self._data[key])


class FileStateStore:
    """One JSON file per key under `root`; writers are serialised by the lock file `root/.lock`.

    Each file holds `{"key": ..., "value": ...}` so hashed (long-key) names can still be listed.
    """

    def __init__(self, root: Path, *, lock_timeout: float = 30.0,
                 redact: Callable[[Any], Any] | None = None) -> None:
        self.root = Path(root)
        self.lock_timeout = lock_timeout
        self.redact = redact
        cleanup_temp_files(self.root)

    def _lock(self) -> FileLock:
        return FileLock(self.root / ".lock", timeout=self.lock_timeout)

    def _load(self, key: str) -> tuple[bool, Any]:
        path = self.root / encode_key(key)
        try:
            data = read_state_file(path)
        except FileNotFoundError:
            return False, None
        if not (isinstance(data, dict) and data.get("key") == key and "value" in data):
            raise StoreCorruptError(
                f"is not a state file for key {_shown(key)}; it was left untouched — "
                "fix it by hand or remove it to start over.",
                file=path,
            )
        return True, data["value"]

    def get(self, key: str) -> Any | None:
        return self._load(key)[1]

    def set(self, key: str, value: Any, *, expect: Any = _MISSING) -> None:
        validate_key(key)
        _dump(value)
        stored = self.redact(value) if self.redact is not None else value
        data = json.dumps({"key": key, "value": stored}, allow_nan=False)
        path = self.root / encode_key(key)
        try:
            tmp = stage(path, data.encode("utf-8"))  # write and fsync outside the lock: the slow part
        except OSError as exc:
            raise _not_saved(key, exc) from None
        try:
            with self._lock():
                # Read even without `expect`: a corrupt file must be reported, not overwritten.
                _check_expect(key, self._load(key)[1], expect)
                commit(tmp, path, sync_dir=False)
            sync_dir(self.root)
        except OSError as exc:
            raise _not_saved(key, exc) from None
        finally:
            tmp.unlink(missing_ok=True)  # still there only if the write was refused

    def delete(self, key: str) -> bool:
        path = self.root / encode_key(key)
        with self._lock():
            try:
                path.unlink()
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
            if key is None and "~" in name and not name.startswith(".") and name.endswith(_SUFFIX):
                key = self._hashed_key(name)
            if key is not None and key.startswith(prefix):
                keys.append(key)
        return sorted(keys)

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

    def wait(self, key: str, timeout: float, poll: float = 0.05) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found, value = self._load(key)
            if found:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _timed_out(key, timeout)
            time.sleep(min(poll, remaining))


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


def _not_saved(key: str, exc: OSError) -> StoreWriteError:
    return StoreWriteError(f"State key {_shown(key)} was not saved: {exc.strerror or exc}; its previous "
                           "value is kept. Free some disk space (or fix the folder's permissions) and retry.")


def store_for(internals: Internals, data_dir: Path, kind: str) -> StateStore:
    """The process's state store of `kind` ('file' under `data_dir/state`, or 'memory'), made once."""

    stores: dict[str, StateStore] = internals.state
    if kind not in stores:
        stores[kind] = MemoryStateStore() if kind == "memory" else FileStateStore(
            data_dir / "state", redact=internals.redactor.redact_data)
    return stores[kind]
