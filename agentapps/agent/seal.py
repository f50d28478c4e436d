"""The seal on a checkpoint's runner settings: who may hand a resumed run its `--approve`,
`--local` and `--record`.

A checkpoint lives in the project (`.agent-apps/checkpoints/`) or in Redis, where a commit or
another program could have put it; the settings a resume reuses from it are authority (approvals
given up front, overrides of the main skill's metadata such as `model.baseUrl` or `sandbox`, a
file to write). Each checkpoint carries an HMAC of those settings under a key private to this user
on this machine (`$XDG_STATE_HOME/agentapps/checkpoint.key`, beside remembered approvals, created
0600 on first use). A resume reuses them only when the seal holds; otherwise the user gives them
again on the command line (as after a move to another machine).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

GUARDED = ("approve", "local", "record")  # the runner settings that carry authority


def key_path() -> Path:
    from agentapps.approvals import state_dir

    return state_dir().parent / "checkpoint.key"


def _key(create: bool) -> bytes | None:
    path = key_path()
    try:
        return path.read_bytes()
    except FileNotFoundError:
        if not create:
            return None
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_bytes()
    with os.fdopen(fd, "wb") as out:
        out.write(secrets.token_bytes(32))
    return path.read_bytes()


def _message(run_id: Any, skill: Any, options: dict[str, Any]) -> bytes:
    held = {"runId": run_id, "skill": skill, **{k: options.get(k) for k in GUARDED}}
    return json.dumps(held, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")


def seal(run_id: Any, skill: Any, options: dict[str, Any]) -> str:
    """The seal of `options` (as saved) for run `run_id` of `skill`. Raises OSError when the key
    cannot be made (the checkpoint is then not saved: one warning)."""
    key = _key(create=True)
    assert key is not None
    return hmac.new(key, _message(run_id, skill, options), hashlib.sha256).hexdigest()


def holds(found: dict[str, Any]) -> bool:
    """Whether checkpoint `found`'s seal is this user's, over the settings it holds."""
    given = found.get("seal")
    options = found.get("options")
    if not isinstance(given, str) or not isinstance(options, dict):
        return False
    try:
        key = _key(create=False)
    except OSError:
        return False
    if key is None:
        return False
    want = hmac.new(key, _message(found.get("runId"), found.get("skill"), options), hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, given)
