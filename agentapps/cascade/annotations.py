"""The `$` annotations a skill's metadata may carry.

agentapps implements `$inherit`, `$private`, `$merge`, `$order` and `$locked` (docs/pipeline.md).
The reference framework names five more that it does not: a skill that uses one is refused, at
run time and by `check`, with what to write instead, rather than run as if the key were not there
(its author expects it to do something). So is any other `$` key in the metadata: they are
annotations, never data, and a misspelt one (`$inherits`) would otherwise be ignored silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

KNOWN = ("$inherit", "$private", "$merge", "$order", "$locked")

# the reference framework's annotations this project does not implement, and what does the job here
NOT_IMPLEMENTED = {
    "$remove": "to keep an ancestor's key from reaching a skill, list it in the ancestor's `$private`, "
               "or set the key on the skill itself (`$merge` decides how the two combine)",
    "$dynamic": "middleware joins a skill's chain by `role: middleware` with `applies-to`/`applies-if` "
                "(docs/pipeline.md), not by metadata keys",
    "$static": "middleware joins a skill's chain by `role: middleware` with `applies-to`/`applies-if`; "
               "`$inherit: false` leaves a skill out of every chain but the locked ones",
    "$self": "`model` set in the main skill's metadata already applies to every skill of the project, "
             "and `--local model.KEY=VALUE` overrides it for one run",
    "$resolve": "share a schema by `$inherit` from the skill that declares it, or with `$ref`/`$defs` "
                "inside the schema",
}


def unsupported(metadata: dict[str, Any]) -> tuple[list[str], str] | None:
    """The first `$` annotation in `metadata` that agentapps does not implement, as (key path under
    `metadata`, what to say), or None. `$resolve` is looked for inside `params` and `returns`."""
    for key in metadata:
        if isinstance(key, str) and key.startswith("$") and key not in KNOWN:
            return [key], _message(key)
    for schema_key in ("params", "returns"):
        found = _find_resolve(metadata.get(schema_key), [schema_key])
        if found is not None:
            return found, _message("$resolve")
    return None


def _message(key: str) -> str:
    instead = NOT_IMPLEMENTED.get(key)
    if instead is not None:
        return f"`{key}` is not implemented by agentapps: {instead}."
    return f"`{key}` is not a metadata annotation (agentapps knows {', '.join(KNOWN)})."


def _find_resolve(value: Any, path: list[str], depth: int = 0) -> list[str] | None:
    if depth > 64:  # (the loader refuses deeper data; a bound keeps this walk total anyway)
        return None
    if isinstance(value, dict):
        if "$resolve" in value:
            return [*path, "$resolve"]
        for key, item in value.items():
            found = _find_resolve(item, [*path, str(key)], depth + 1)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _find_resolve(item, [*path, str(index)], depth + 1)
            if found is not None:
                return found
    return None


def line_of(path: Path | None, key: str) -> int | None:
    """The first line of the skill's file that names `key` (for the one-line error), if any."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        if key in line:
            return number
    return None
