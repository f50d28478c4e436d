"""Human approval for calls matching a caller's `trust.rules`: ask on a terminal, deny without one."""

from __future__ import annotations

import json
import os
import select
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentapps.errors import ConfigError, DeniedError, UsageError
from agentapps.tools.policy import Candidate, Rule, split_patterns

DEFAULT_TIMEOUT = 60.0
# A front end that reaches its user another way sets this for the calls it serves, and `decide`
# asks it instead of the terminal: `agentapps mcp-server` asks its client (MCP elicitation).
# `ask(question, timeout)` answers 'once', 'always' or 'deny'.
ASK: ContextVar[Callable[[str, float], str] | None] = ContextVar("agentapps_trust_ask", default=None)


class Question(str):
    """The question text, carrying the call it is about, so a front end can show it its own way."""

    caller: str
    callee: str
    rule: str
    args: Any


def question(text: str, *, caller: str, callee: str, rule: str, args: Any) -> Question:
    asked = Question(text)
    asked.caller, asked.callee, asked.rule, asked.args = caller, callee, rule, args
    return asked


def rules_of(meta: dict[str, Any], owner: str = "") -> list[str]:
    """The rule texts of one `metadata.trust` (`"a b"`, `[a, b]`, `{rules: "a b"}` or
    `{rules: [a, b]}`; `false` or nothing: none). Any other value is refused: ignoring it would run
    without asking what its author meant to gate."""
    trust = meta.get("trust")
    if isinstance(trust, (str, list)):
        text: Any = trust
    elif isinstance(trust, dict):
        text = trust.get("rules") or ""
    elif trust is None or trust is False:
        return []
    else:
        raise ConfigError(f"Skill '{owner}' has `trust: {trust!r}`; give rules as text (\"file-write shell\"), "
                          "a list of rules, or {rules: ...}.", skill=owner or None)
    if not isinstance(text, (str, list)):
        raise ConfigError(f"Skill '{owner}' has `trust.rules: {text!r}`; give rules as text or a list.",
                          skill=owner or None)
    if isinstance(text, list):
        return [str(t).strip() for t in text if str(t).strip()]
    try:
        return split_patterns(str(text))
    except UsageError as exc:
        raise ConfigError(f"Skill '{owner}' trust rules: {exc.message}", skill=owner or None) from None


@lru_cache(maxsize=1024)
def parse_rule(text: str, owner: str) -> Rule:
    """One trust rule, in allowed-tools syntax (globs, `#tag`, argument constraints)."""
    try:
        return Rule.parse(text)
    except UsageError as exc:
        raise ConfigError(f"Skill '{owner}' trust rules: {exc.message}", skill=owner) from None


def rule_matches(rule: Rule, callee: Candidate, view: Mapping[str, Any]) -> bool:
    """A trust rule fires when it selects the callee and its constraints hold on the normalised
    arguments. Unlike a grant, an unconstrained action argument never stops it from firing."""
    return rule.selects(callee) and rule.unmet(view) is None


def needs_approval(rule_sets: Sequence[tuple[str, list[str]]], callee: Candidate,
                   view: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first (owner, rule) whose trust rule fires for this call."""
    for owner, rules in rule_sets:
        for text in rules:
            if rule_matches(parse_rule(text, owner), callee, view):
                return owner, text
    return None


def approved_by(patterns: Sequence[str], callee: Candidate, view: Mapping[str, Any]) -> bool:
    """`--approve PATTERN`s use the same syntax: `shell(command=git *)` approves only such calls."""
    for text in patterns:
        try:
            rule = Rule.parse(text)
        except UsageError:
            continue  # a pattern that does not parse approves nothing
        if rule_matches(rule, callee, view):
            return True
    return False


def shown_args(args: Any) -> str:
    """Every argument in full, as JSON, with anything a terminal could hide or reinterpret
    (control and format characters: ANSI escapes, bidi overrides, zero-width spaces) escaped."""
    from agentapps.core.terminal import escape

    return escape(json.dumps(args, ensure_ascii=False, indent=2, sort_keys=True, default=str), strict=True)


def _store(data_dir: Path) -> Path:
    return data_dir / "trust.json"


def remembered(data_dir: Path, caller: str, callee: str) -> bool:
    from agentapps.core.atomic import read_json

    path = _store(data_dir)
    if not path.exists():
        return False
    data = read_json(path) or {}
    return f"{caller} -> {callee}" in (data.get("always") or [])


def remember(data_dir: Path, caller: str, callee: str) -> None:
    from agentapps.core.atomic import FileLock, read_json, write_atomic

    path = _store(data_dir)
    with FileLock(data_dir / ".trust.lock"):
        data = (read_json(path) if path.exists() else None) or {}
        always = sorted(set(data.get("always") or []) | {f"{caller} -> {callee}"})
        write_atomic(path, json.dumps({"always": always}, indent=2).encode())


def log_decision(data_dir: Path, caller: str, callee: str, decision: str) -> None:
    from agentapps.core.atomic import require_inside

    require_inside(data_dir, data_dir / "trust.log")  # a committed symlink appends to no other file
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = json.dumps({"time": time.time(), "caller": caller, "callee": callee, "decision": decision})
    fd = os.open(data_dir / "trust.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def ask_terminal(question: str, timeout: float) -> str:
    """'once', 'always' or 'deny' (also on timeout or end of input). The question is escaped as a
    whole, and what was typed before it shows is dropped: a `y` typed at a model's imitation of
    this question does not answer it."""
    from agentapps.core.terminal import escape, flush_input

    flush_input(sys.stdin)  # before the question shows: an answer typed after it is never lost
    sys.stderr.write(f"{escape(question, strict=True)} [y] once / [a] always / [N] deny ({int(timeout)}s): ")
    sys.stderr.flush()
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if not ready:
        sys.stderr.write("\n(no answer: denied)\n")
        return "deny"
    answer = sys.stdin.readline().strip().lower()
    return {"y": "once", "yes": "once", "a": "always", "always": "always"}.get(answer, "deny")


def decide(
    *, caller: str, callee: str, rule: str, args: dict[str, Any], data_dir: Path, approve: list[str],
    interactive: bool, timeout: float = DEFAULT_TIMEOUT, candidate: Candidate | None = None,
    view: Mapping[str, Any] | None = None,
) -> None:
    """Raise DeniedError unless the call is approved: by --approve, or on a terminal by a remembered
    'always' or the user's answer. Without a terminal only --approve counts, so an approval file
    (which could arrive in a pull request) never approves anything in CI. A front end's client
    (`ASK`: serve, mcp-server) answers for this call only: the terminal user's remembered approvals
    do not answer for it, and its 'always' is not remembered for anyone else."""
    who = candidate or Candidate(callee)
    ask = ASK.get()
    interactive = interactive or ask is not None
    if approved_by(approve, who, args if view is None else view):
        log_decision(data_dir, caller, callee, "approved (--approve)")
        return
    if interactive and ask is None and remembered(data_dir, caller, callee):
        log_decision(data_dir, caller, callee, "approved (always)")
        return
    if interactive:
        shown = shown_args(args)
        if view is not None and dict(view) != dict(args):
            shown += "\n  which resolves to: " + shown_args(dict(view))
        text = f"Skill '{caller}' wants to call '{callee}' (trust rule '{rule}') with arguments:\n{shown}\nAllow?"
        answer = (ask or ask_terminal)(question(text, caller=caller, callee=callee, rule=rule, args=args), timeout)
        if answer == "always" and ask is not None:
            answer = "once"  # a client's answer binds no one else
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
