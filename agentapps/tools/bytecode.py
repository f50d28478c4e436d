"""Compiled skill code, cached by the hash of the very bytes that were checked.

Code skills are compiled from the source the loader read and checked (never from a `__pycache__`
file beside them, which anything able to write there could forge). Compiling costs a few
milliseconds per file on every run, so the code object is kept in the user's cache folder
(`AGENTAPPS_CACHE_DIR`, default `~/.cache/agentapps/code/`) under the SHA-256 of the source and the
interpreter's version: a cached entry can only ever be the compilation of identical bytes. An
unreadable or damaged entry is compiled again and rewritten; the cache is an optimisation only.
"""

from __future__ import annotations

import marshal
import os
import sys
from importlib import import_module
from pathlib import Path
from types import CodeType
from typing import Any


def _sha256() -> Any:
    """The C module's sha256: importing hashlib loads OpenSSL (milliseconds on every run)."""
    for name in ("_sha256", "_sha2"):  # 3.11, and 3.12+
        try:
            return import_module(name).sha256
        except ImportError:
            continue
    from hashlib import sha256  # pragma: no cover - an interpreter without either

    return sha256


sha256 = _sha256()

MAGIC = f"{sys.implementation.cache_tag}".encode()


def cache_base() -> Path | None:
    """agentapps' cache folder (`AGENTAPPS_CACHE_DIR`, else `$XDG_CACHE_HOME/agentapps` or
    `~/.cache/agentapps`), or None when caching is off."""
    base = os.environ.get("AGENTAPPS_CACHE_DIR")
    if base == "off":
        return None
    if not base:
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"), "agentapps")
    return Path(base)


def _cache_dir() -> Path | None:
    base = cache_base()
    return None if base is None else base / "code"


def compiled(source: bytes, path: Path) -> CodeType:
    """`compile(source)` for the skill file `path`, from the cache when these bytes were compiled before."""
    folder = _cache_dir()
    key = sha256(MAGIC + b"\0" + os.fsencode(path) + b"\0" + source).hexdigest()
    entry = folder / key[:2] / key if folder is not None else None
    if entry is not None:
        try:
            code = marshal.loads(entry.read_bytes())
            if isinstance(code, CodeType) and code.co_filename == str(path):
                return code
        except (OSError, EOFError, ValueError, TypeError):
            pass
    code = compile(source, str(path), "exec", dont_inherit=True)
    if entry is not None:
        try:
            entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = entry.with_name(f".{key}.{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps(code))
            os.replace(tmp, entry)
        except OSError:
            pass  # a read-only home: compile every time
    return code
