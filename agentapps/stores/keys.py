"""State keys and values: key validation, keys as safe file names, JSON values and their equality."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Final
from urllib.parse import unquote_to_bytes

from agentapps.core.jsontext import encoder
from agentapps.errors import ConflictError, LimitError, UsageError

MAX_KEY_CHARS: Final = 256
MISSING: Final[Any] = object()  # `expect` not given: an unconditional write
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")
_SAFE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
SUFFIX: Final = ".json"
# Longer encoded names are shortened and hashed so file names stay well under NAME_MAX (255).
_MAX_STEM: Final = 200
_HASHED_PREFIX: Final = 150


def shown(key: str) -> str:
    return repr(key if len(key) <= 60 else key[:57] + "...")


def validate_key(key: object) -> str:
    """Return `key` if it is a usable state key, else raise UsageError saying what is wrong."""
    if not isinstance(key, str):
        raise UsageError(f"State key must be a string, not {type(key).__name__}.")
    if not 1 <= len(key) <= MAX_KEY_CHARS:
        raise UsageError(f"State key {shown(key)} must be 1-{MAX_KEY_CHARS} characters long.")
    if _CONTROL.search(key):
        raise UsageError(f"State key {shown(key)} contains a control character; remove it.")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"State key {shown(key)} is not valid Unicode text.") from None
    return key


@lru_cache(maxsize=4096)  # pure, and the same keys come back (job:1, job:2, ...)
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
    return stem + SUFFIX


def decode_name(name: str) -> str | None:
    """The key stored under file `name`, or None if the name is not a plain encoded key."""
    if not name.endswith(SUFFIX) or "~" in name or name.startswith("."):
        return None
    raw = unquote_to_bytes(name[: -len(SUFFIX)])
    try:
        key = raw.decode("utf-8")
        return key if encode_key(key) == name else None
    except (UnicodeDecodeError, UsageError):
        return None


def dump(value: Any, what: str = "value") -> str:
    try:
        return _DUMP(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"State {what} is not JSON-serialisable ({exc}).") from None
    except RecursionError:  # (the encoder made once keeps no record of what it saw: a cycle ends here)
        raise UsageError(f"State {what} is not JSON-serialisable (it is nested too deep, or holds "
                         "itself).") from None


_DUMP: Final = encoder(sort_keys=True, separators=(",", ":"), allow_nan=False)
_PLAIN: Final = frozenset({str, int, bool, type(None)})


def numbers_as_json(value: Any) -> Any:
    """JSON has one number type: make 1.0 compare equal to 1 (but keep true distinct from 1). A
    container holding no integral float comes back as it is, not copied (the text is the same)."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        copy: Any = None
        for key, item in value.items():
            if type(item) not in _PLAIN and (new := numbers_as_json(item)) is not item:
                copy = dict(value) if copy is None else copy
                copy[key] = new
        return value if copy is None else copy
    if isinstance(value, list | tuple):
        copy = None
        for i, item in enumerate(value):
            if type(item) not in _PLAIN and (new := numbers_as_json(item)) is not item:
                copy = list(value) if copy is None else copy
                copy[i] = new
        return value if copy is None else copy
    return value


def check_expect(key: str, current: Any | None, expect: Any) -> None:
    if expect is not MISSING and canonical(current) != canonical(expect, "expect value"):
        raise conflict(key, expect)


def conflict(key: str, expect: Any) -> ConflictError:
    return ConflictError(f"State key {shown(key)} changed since it was read (expected {dump(expect)[:60]}); "
                         "read it again and retry.")


def timed_out(key: str, timeout: float) -> LimitError:
    return LimitError(
        f"Timed out after {timeout:g} s waiting for state key {shown(key)}; "
        "raise the timeout or check that something sets the key."
    )


def canonical(value: Any, what: str = "value") -> str:
    """The one text of a JSON value that equal values share (sorted keys, 1.0 written as 1)."""
    try:
        plain = numbers_as_json(value)
    except RecursionError:
        raise UsageError(f"State {what} is not JSON-serialisable (it is nested too deep, or holds "
                         "itself).") from None
    return dump(plain, what)
