"""A per-root cache of parsed skill files on disk, so a new process need not re-read every frontmatter.

Entries are keyed by path, mtime and size; anything that does not round-trip through JSON exactly is
simply not cached. The cache is an optimisation only: a cache file that is unreadable, not JSON,
nested too deep, or not exactly in the shape this module writes is ignored and rewritten. `AGENTAPPS_CACHE_DIR` moves it (default `$XDG_CACHE_HOME/agentapps` or
`~/.cache/agentapps`); `AGENTAPPS_CACHE_DIR=off` disables it.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

from agentapps.errors import SkillLoadError
from agentapps.types import RootKind, ToolDef

VERSION = 1
Entry = tuple[int, int, Any]


def cache_path(root: Path) -> Path | None:
    base = os.environ.get("AGENTAPPS_CACHE_DIR")
    if base == "off":
        return None
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = os.path.join(xdg, "agentapps")
    digest = zlib.crc32(str(root).encode())  # the file also records its root, so a clash is harmless
    return Path(base) / f"index-{digest:08x}.json"


def encode(item: Any) -> dict[str, Any] | None:
    from agentapps.tools.index import Broken

    if isinstance(item, Broken):
        e = item.error
        return {"broken": item.name, "path": str(item.path), "message": e.message, "line": e.line}
    tool: ToolDef = item
    data = {"name": tool.name, "kind": tool.kind, "frontmatter": tool.frontmatter, "path": str(tool.path),
            "body": tool.body, "body_line": tool.body_line, "uri": tool.uri, "mtime": tool.mtime_ns}
    try:
        return data if json.loads(json.dumps(data)) == data else None  # e.g. YAML dates: don't cache
    except (TypeError, ValueError):
        return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _well_formed(path: str, entry: Any) -> bool:
    """Is `entry` exactly the shape `save` writes for `path`? (A hand-edited or damaged file is not.)"""
    if not (isinstance(entry, list) and len(entry) == 3 and _is_int(entry[0]) and _is_int(entry[1])):
        return False
    data = entry[2]
    if not isinstance(data, dict) or data.get("path") != path:
        return False
    if "broken" in data:
        return (isinstance(data["broken"], str) and isinstance(data.get("message"), str)
                and (data.get("line") is None or _is_int(data.get("line"))))
    front = data.get("frontmatter")
    return (isinstance(data.get("name"), str) and data.get("kind") in ("markdown", "code")
            and isinstance(front, dict) and isinstance(front.get("metadata", {}), dict)
            and isinstance(data.get("body"), str) and _is_int(data.get("body_line"))
            and (data.get("uri") is None or isinstance(data.get("uri"), str)) and _is_int(data.get("mtime")))


def decode(data: dict[str, Any], root: Path, kind: RootKind) -> Any:
    from agentapps.tools.index import Broken

    if "broken" in data:
        path = Path(data["path"])
        return Broken(data["broken"], path, SkillLoadError(data["message"], file=path, line=data.get("line")))
    return ToolDef(data["name"], data["kind"], data["frontmatter"], Path(data["path"]), data["body"],
                   data["body_line"], None, data.get("uri"), root, kind, data["mtime"])


def load(root: Path, kind: RootKind) -> dict[str, Entry]:
    """The cached entries of `root`; {} (so the cache is rebuilt and rewritten) for a file that is
    missing, unreadable, not JSON, nested too deep, or not in the shape `save` writes."""
    path = cache_path(root)
    if path is None:
        return {}
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not (isinstance(raw, dict) and raw.get("version") == VERSION and raw.get("root") == str(root)):
        return {}
    files = raw.get("files")
    if not isinstance(files, dict) or not all(_well_formed(p, e) for p, e in files.items()):
        return {}
    return {p: (e[0], e[1], decode(e[2], root, kind)) for p, e in files.items()}


def save(root: Path, files: dict[str, Entry]) -> None:
    path = cache_path(root)
    if path is None:
        return
    encoded = {}
    for p, (mtime, size, item) in files.items():
        data = encode(item)
        if data is not None:
            encoded[p] = [mtime, size, data]
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": VERSION, "root": str(root), "files": encoded}), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home is fine: the cache is only an optimisation
