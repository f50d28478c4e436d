"""Human approval for calls matching a caller's `trust.rules`: ask on a terminal, deny without one."""

from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

from agentapps.core.atomic import FileLock, read_json, write_atomic
from agentapps.errors import DeniedError
from agentapps.tools.policy import matches_pattern

DEFAULT_TIMEOUT = 60.0


def rules_of(meta: dict[str, Any]) -> list[str]:
    trust = meta.get("trust")
    if isinstance(trust, str):
        text = trust
    elif isinstance(trust, dict):
        text = trust.get("rules") or ""
    else:
        return []
    if isinstance(text, list):
        text = " ".join(str(t) for t in text)
    return [r for r in str(text).split() if r]


def needs_approval(callers: list[tuple[str, dict[str, Any]]], callee: str) -> tuple[str, str] | None:
    """The first (caller, rule) up the call tree whose trust rules match `callee`."""
    for name, meta in callers:
        for rule in rules_of(meta):
            if matches_pattern(rule, callee):
                return name, rule
    return None


def _store(data_dir: Path) -> Path:
    return data_dir / "trust.json"


def remembered(data_dir: Path, caller: str, callee: str) -> bool:
    path = _store(data_dir)
    if not path.exists():
        return False
    data = read_json(path) or {}
    return f"{caller} -> {callee}" in (data.get("always") or [])


def remember(data_dir: Path, caller: str, callee: str) -> None:
    path = _store(data_dir)
    with FileLock(data_dir / ".trust.lock"):
        data = (read_json(path) if path.exists() else None) or {}
        always = sorted(set(data.get("always") or []) | {f"{caller} -> {callee}"})
        write_atomic(path, json.dumps({"always": always}, indent=2).encode())


def log_decision(data_dir: Path, caller: str, callee: str, decision: str) -> None:
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = json.dumps({"time": time.time(), "caller": caller, "callee": callee, "decision": decision})
    fd = os.open(data_dir / "trust.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def ask_terminal(question: str, timeout: float) -> str:
    """'once', 'always' or 'deny' (also on timeout or end of input)."""
    sys.stderr.write(f"{question} [y] once / [a] always / [N] deny ({int(timeout)}s): ")
    sys.stderr.flush()
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if not ready:
        sys.stderr.write("\n(no answer: denied)\n")
        return "deny"
    answer = sys.stdin.readline().strip().lower()
    return {"y": "once", "yes": "once", "a": "always", "always": "always"}.get(answer, "deny")


def decide(
    *, caller: str, callee: str, rule: str, args: dict[str, Any], data_dir: Path, approve: list[str],
    interactive: bool, timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Raise DeniedError unless the call is approved: by --approve, or on a terminal by a remembered
    'always' or the user's answer. Without a terminal only --approve counts, so an approval file
    (which could arrive in a pull request) never approves anything in CI."""
    if any(matches_pattern(p, callee) for p in approve):
        log_decision(data_dir, caller, callee, "approved (--approve)")
        return
    if interactive and remembered(data_dir, caller, callee):
        log_decision(data_dir, caller, callee, "approved (always)")
        return
    if interactive:
        shown = json.dumps(args, ensure_ascii=False, default=str)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        answer = ask_terminal(f"Skill '{caller}' wants to call '{callee}' {shown}. Allow?", timeout)
        if answer == "always":
            remember(data_dir, caller, callee)
        if answer in ("once", "always"):
            log_decision(data_dir, caller, callee, answer)
            return
        log_decision(data_dir, caller, callee, "denied")
        raise DeniedError(f"Call from '{caller}' to '{callee}' was not approved (trust rule '{rule}').", skill=callee)
    log_decision(data_dir, caller, callee, "denied (no terminal)")
    raise DeniedError(
        f"Call from '{caller}' to '{callee}' needs approval (trust rule '{rule}') and there is no terminal to ask; "
        f"rerun with --approve '{callee}' to allow it.",
        skill=callee,
    )
