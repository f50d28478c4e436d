"""Remembered "always" approvals: in the user's state folder, one file per project, each one for
the rule that asked and the argument pattern that was answered, never wider.

Where: `$XDG_STATE_HOME/agentapps/approvals/` (default `~/.local/state/agentapps/approvals/`), in
`<sha256 of the project's resolved root>.json`, written atomically with mode 0600 under a lock
file of its own. Never in the checkout: a file there could have come from a commit.

What one approval covers: the same caller, callee and rule text; each argument the rule
constrains matches the rule's own pattern as written (`file-write(path=docs/*)`); every other
argument that decides the action (the callee's `metadata.action-args`, or every argument when it
declares none) has exactly the value that was asked. Exact values are kept as SHA-256 digests, so
a command line or a path holding a secret is not written down in clear.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentapps.errors import StoreCorruptError
from agentapps.tools.policy import matches_pattern

FOLDER = ("agentapps", "approvals")


def state_dir() -> Path:
    """The folder of remembered approvals: `$XDG_STATE_HOME/agentapps/approvals`, else
    `~/.local/state/agentapps/approvals`."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"  # XDG: relative is invalid
    return root.joinpath(*FOLDER)


def store_for(project: Path) -> Path:
    """The file holding one project's approvals, keyed by its resolved root path."""
    from hashlib import sha256

    root = os.path.realpath(project)
    return state_dir() / f"{sha256(os.fsencode(root)).hexdigest()}.json"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _digest(value: Any) -> str:
    from hashlib import sha256

    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _present(view: Mapping[str, Any]) -> set[str]:
    return {str(k) for k, v in view.items() if v is not None}


def scope_of(*, caller: str, callee: str, rule: str, constraints: Sequence[tuple[str, str]],
             action: Sequence[str], view: Mapping[str, Any]) -> dict[str, Any]:
    """The approval an "always" answer gives: the rule's constraints as written, and the exact
    value of every other argument that decides the action (all arguments when none are declared)."""
    match = {key: want for key, want in constraints}
    keys = [k for k in action if k not in match] if action else sorted(_present(view) - set(match))
    return {"caller": caller, "callee": callee, "rule": rule, "match": match,
            "exact": {key: _digest(view.get(key)) for key in keys}, "every": not action}


def _matches(pattern: str, value: Any) -> bool:
    """A remembered pattern covers a shell line (a Compound: its simple commands) only when the line
    could be reduced and EVERY command matches it, as a grant admits: the answer was about those
    commands, never about what else a line may run beside them."""
    from agentapps.tools.compound import Compound

    if isinstance(value, Compound):
        return value.problem is None and len(value) > 0 and all(matches_pattern(pattern, one) for one in value)
    return matches_pattern(pattern, _text(value))


def covers(record: Any, *, caller: str, callee: str, rule: str, view: Mapping[str, Any]) -> bool:
    """Whether one remembered approval covers this call. A record of any other shape covers nothing."""
    if not isinstance(record, dict) or (record.get("caller"), record.get("callee"), record.get("rule")) != (
            caller, callee, rule):
        return False
    match, exact = record.get("match"), record.get("exact")
    if not isinstance(match, dict) or not isinstance(exact, dict):
        return False
    for key, want in match.items():
        if view.get(key) is None or not isinstance(want, str) or not _matches(want, view[key]):
            return False
    if record.get("every", True) and _present(view) - set(match) - set(exact):
        return False  # an argument nobody answered for
    return all(_digest(view.get(key)) == digest for key, digest in exact.items())


def _records(path: Path) -> list[Any]:
    from agentapps.core.atomic import read_json

    try:
        data = read_json(path)
    except FileNotFoundError:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("always"), list):
        raise StoreCorruptError("is not a file of remembered approvals (an object with an 'always' list); it "
                                "was left untouched — remove it to forget them.", file=path)
    return list(data["always"])


def remembered(project: Path, *, caller: str, callee: str, rule: str, view: Mapping[str, Any]) -> bool:
    """Whether an "always" answered earlier for this project covers this call."""
    path = store_for(project)
    return any(covers(r, caller=caller, callee=callee, rule=rule, view=view) for r in _records(path))


def remember(project: Path, scope: dict[str, Any]) -> Path:
    """Add one approval (from `scope_of`) to the project's file; return the file."""
    from agentapps.core.atomic import FileLock, make_private_dirs, write_atomic

    path = store_for(project)
    make_private_dirs(path.parent)
    with FileLock(path.with_suffix(".lock")):
        records = _records(path)
        if scope not in [{k: v for k, v in r.items() if k != "time"} for r in records if isinstance(r, dict)]:
            records.append({**scope, "time": int(time.time())})
        data = {"project": os.path.realpath(project), "always": records}
        write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return path
