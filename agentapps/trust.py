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
    """The question text, carrying the call it is about, so a front end can show it its own way.
    `always` says whether "always" may be offered (never for writing code)."""

    caller: str
    callee: str
    rule: str
    args: Any
    always: bool


def question(text: str, *, caller: str, callee: str, rule: str, args: Any, always: bool = True) -> Question:
    asked = Question(text)
    asked.caller, asked.callee, asked.rule, asked.args, asked.always = caller, callee, rule, args, always
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
    arguments: for a shell line, when ANY of its commands matches, and always when the line cannot
    be reduced to plain commands (docs/shell-rules.md). Unlike a grant, an unconstrained action
    argument never stops it from firing."""
    return rule.selects(callee) and rule.fires(view)


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
        if rule.selects(callee) and rule.unmet(view) is None:  # as a grant: every command must match
            return True
    return False


def shown_args(args: Any) -> str:
    """Every argument in full, as JSON, with anything a terminal could hide or reinterpret
    (control and format characters: ANSI escapes, bidi overrides, zero-width spaces) escaped."""
    from agentapps.core.terminal import escape

    return escape(json.dumps(args, ensure_ascii=False, indent=2, sort_keys=True, default=str), strict=True)


def _unreduced(view: Mapping[str, Any]) -> bool:
    from agentapps.tools.compound import Compound

    return any(isinstance(value, Compound) and value.problem is not None for value in view.values())


def _constraints(rule: str, who: Candidate, view: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The argument constraints of the rule that asked, as written (none when the question did not
    come from a trust rule, e.g. an MCP tool's `confirm`)."""
    try:
        parsed = Rule.parse(rule)
    except UsageError:
        return ()
    return parsed.constraints if rule_matches(parsed, who, view) else ()


@lru_cache(maxsize=256)  # once per process and file
def warn_checkout_file(path: str) -> None:
    """A `trust.json` in a checkout approves nothing: say so once, naming it."""
    from agentapps.approvals import state_dir
    from agentapps.core.terminal import escape

    sys.stderr.write(escape(f"warning: ignoring {path}: approvals are remembered in {state_dir()}, never in a "
                            "checkout (this file could have come from a commit); answer again to approve.")
                     + "\n")
    sys.stderr.flush()


def _checkout_file(data_dir: Path) -> None:
    found = data_dir / "trust.json"
    if os.path.lexists(found):
        warn_checkout_file(str(found))


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
    this question does not answer it. A question about writing code does not offer "always"."""
    from agentapps.core.terminal import escape, flush_input

    offer = getattr(question, "always", True)
    choices = "[y] once / [a] always / [N] deny" if offer else "[y] once / [N] deny"
    flush_input(sys.stdin)  # before the question shows: an answer typed after it is never lost
    sys.stderr.write(f"{escape(question, strict=True)} {choices} ({int(timeout)}s): ")
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
    view: Mapping[str, Any] | None = None, writes_code: bool = False,
) -> None:
    """Raise DeniedError unless the call is approved: by --approve, or on a terminal by a remembered
    'always' or the user's answer. Without a terminal only --approve counts. A remembered 'always'
    covers the rule that asked and the argument pattern that was answered, nothing wider, and is
    kept in the user's state folder (`agentapps.approvals`), never in the checkout: a
    `.agent-apps/trust.json` there is ignored with a warning. Writing code (`writes_code`: the
    file guard's protected paths) always asks: "always" is neither offered nor remembered. A front
    end's client (`ASK`: serve, mcp-server) answers for this call only: the terminal user's
    remembered approvals do not answer for it, and its 'always' is not remembered for anyone."""
    from agentapps import approvals

    who = candidate or Candidate(callee)
    seen: Mapping[str, Any] = args if view is None else view
    ask = ASK.get()
    interactive = interactive or ask is not None
    project = data_dir.parent
    _checkout_file(data_dir)
    if approved_by(approve, who, seen):
        log_decision(data_dir, caller, callee, "approved (--approve)")
        return
    # only the terminal's user answers for later runs, and never for writing code or for a shell line
    # that cannot be reduced to plain commands (what it runs is not known: each one asks)
    offer = not writes_code and ask is None and not _unreduced(seen)
    if interactive and offer and approvals.remembered(project, caller=caller, callee=callee, rule=rule, view=seen):
        log_decision(data_dir, caller, callee, "approved (always)")
        return
    if interactive:
        shown = shown_args(args)
        if view is not None and dict(view) != dict(args):
            shown += "\n  which resolves to: " + shown_args(dict(view))
        text = f"Skill '{caller}' wants to call '{callee}' (trust rule '{rule}') with arguments:\n{shown}\nAllow?"
        asked = question(text, caller=caller, callee=callee, rule=rule, args=args,
                         always=not writes_code and not _unreduced(seen))
        answer = (ask or ask_terminal)(asked, timeout)
        if answer == "always" and not offer:
            answer = "once"  # writing code always asks again; a client's answer binds no one else
        if answer == "always":
            scope = approvals.scope_of(caller=caller, callee=callee, rule=rule, view=seen, action=who.action,
                                       constraints=_constraints(rule, who, seen))
            approvals.remember(project, scope)
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
