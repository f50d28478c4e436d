"""The allowed-tools policy: glob/`#tag` patterns with specifiers, and who may call what."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from agentapps.core.shown import fields_repr
from agentapps.errors import DeniedError, UsageError
from agentapps.tools.compound import Compound, one_by_one, unreduced
from agentapps.tools.names import is_foreign

MAX_PATTERN = 1000
MAX_NESTING = 32  # keeps the recursive brace reader far from the interpreter stack limit
MAX_ALTERNATIVES = 256  # brace expansion cap: `{a,b}` repeated 9 times already exceeds it
_STAR = "*"  # sentinel unit; a literal `*` compiles to `\*`, so the two never collide
_GLOB_CHARS = frozenset("*?[]{}\\")
_SPACES = " \t\r\n"
_CLOSER = {"{": "}", "(": ")", "[": "]"}
Expansion = tuple[str, ...]  # one brace-free glob as fixed-width regex units and _STAR


def _bad(pattern: str, why: str) -> UsageError:
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return UsageError(f"Malformed pattern '{shown}': {why}.")


def _split(text: str, seps: str) -> list[str]:
    """Split `text` at `seps` outside braces, parentheses and brackets; refuse imbalance."""
    parts: list[str] = []
    buf: list[str] = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            buf.append(text[i : i + 2])
            i += 2
            continue
        i += 1
        if stack and stack[-1] == "]":  # inside a class everything but `]` is literal
            if ch == "]":
                stack.pop()
        elif ch in _CLOSER:
            stack.append(_CLOSER[ch])
        elif ch in ")}]":
            if not stack or stack.pop() != ch:
                rest = text[i - 1 :].split(maxsplit=1)[0]
                raise _bad("".join(buf) + rest, f"unbalanced '{ch}'")
        elif ch in seps and not stack:
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    if stack:
        raise _bad("".join(buf), f"missing '{stack[-1]}'")
    parts.append("".join(buf))
    return parts


def split_patterns(text: str) -> list[str]:
    """The patterns of an allowed-tools (or trust rules) string: separated by spaces, or by
    commas outside braces and specifiers (`Read, Grep, Glob`, as Agent Skills write them)."""
    return [tok for tok in _split(text.strip(), _SPACES + ",") if tok]


def _unit(p: str, i: int) -> tuple[str, int]:
    """Translate the single glob element at p[i] into one fixed-width regex unit (or _STAR)."""
    ch = p[i]
    if ch in "*?":
        return (_STAR if ch == "*" else "."), i + 1
    if ch == "\\":
        if i + 1 >= len(p):
            raise _bad(p, "trailing '\\'")
        return re.escape(p[i + 1]), i + 2
    if ch in "]}":
        raise _bad(p, f"unbalanced '{ch}'")
    if ch != "[":
        return re.escape(ch), i + 1
    end = p.find("]", i + 1)
    negate = p[i + 1 : i + 2] in ("!", "^")
    body = p[i + 1 + negate : end]
    if end < 0 or not body or "\\" in body:
        why = "missing ']'" if end < 0 else "empty class" if not body else "'\\' in a class"
        raise _bad(p, why)
    chars = [c if c == "-" and 0 < k < len(body) - 1 else re.escape(c) for k, c in enumerate(body)]
    return "[" + ("^" if negate else "") + "".join(chars) + "]", end + 1


def _expand(p: str, i: int, depth: int) -> tuple[list[Expansion], int]:
    """Read p[i:] up to an unnested `,`/`}` (inside braces) and return its brace-free expansions."""
    alts: list[Expansion] = [()]
    while i < len(p):
        if depth and p[i] in ",}":
            break
        if p[i] != "{":
            unit, i = _unit(p, i)
            alts = [a + (unit,) for a in alts]
            continue
        if depth >= MAX_NESTING:
            raise _bad(p, f"braces nested deeper than {MAX_NESTING}")
        options: list[Expansion] = []
        i += 1
        while True:
            got, i = _expand(p, i, depth + 1)
            options.extend(got)
            if i >= len(p):
                raise _bad(p, "missing '}'")
            i += 1
            if p[i - 1] == "}" or len(options) > MAX_ALTERNATIVES:
                break
        if len(alts) * len(options) > MAX_ALTERNATIVES:
            raise _bad(p, f"braces expand to more than {MAX_ALTERNATIVES} alternatives")
        alts = [a + o for a in alts for o in options]
    return alts, i


def _regex(units: Expansion) -> str:
    """Compile one brace-free glob; middle segments are matched leftmost inside atomic groups,
    which is exact for fixed-width segments and keeps matching linear per segment (no ReDoS)."""
    segments = [""]
    for unit in units:
        if unit == _STAR:
            segments.append("")
        else:
            segments[-1] += unit
    if len(segments) == 1:
        return segments[0]
    middle = "".join(f"(?>.*?{s})" for s in segments[1:-1] if s)
    return f"{segments[0]}{middle}.*{segments[-1]}"


@lru_cache(maxsize=2048)
def _compile(pattern: str) -> re.Pattern[str]:
    if len(pattern) > MAX_PATTERN:
        raise _bad(pattern, f"longer than {MAX_PATTERN} characters")
    alts, _ = _expand(pattern, 0, 0)
    body = "|".join(f"(?:{_regex(a)})" for a in dict.fromkeys(alts))
    try:
        return re.compile(body, re.DOTALL)
    except re.error as exc:
        raise _bad(pattern, str(exc)) from None


def matches_pattern(pattern: str, name: str) -> bool:
    """Whether `name` matches the whole glob (`*`, `?`, `[rw]`, `[!x]`, nested `{a,b}`)."""
    return _compile(pattern).fullmatch(name) is not None


class Candidate:
    """The skill being called. `action` names the arguments (of the policy view) that decide what
    the call does: a rule with argument constraints must constrain every one of them present."""

    FIELDS = ("name", "tags", "hidden", "action")
    __slots__ = FIELDS
    name: str
    tags: tuple[str, ...]
    hidden: bool  # metadata.visibility == "hidden"
    action: tuple[str, ...]

    def __init__(self, name: str, tags: tuple[str, ...] = (), hidden: bool = False,
                 action: tuple[str, ...] = ()) -> None:
        self.name, self.tags, self.hidden, self.action = name, tags, hidden, action

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


class Decision:
    """One policy's verdict on one call, with a reason fit for an error message."""

    FIELDS = ("allowed", "reason")
    __slots__ = FIELDS
    allowed: bool
    reason: str

    def __init__(self, allowed: bool, reason: str) -> None:
        self.allowed, self.reason = allowed, reason

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


class Rule:
    """One parsed pattern: a name glob or `#tag` selector, argument constraints, the deny flag."""

    FIELDS = ("text", "selector", "tag", "constraints", "deny")
    __slots__ = FIELDS
    text: str
    selector: str
    tag: bool
    constraints: tuple[tuple[str, str], ...]
    deny: bool

    def __init__(self, text: str, selector: str, tag: bool = False,
                 constraints: tuple[tuple[str, str], ...] = (), deny: bool = False) -> None:
        self.text, self.selector, self.tag, self.constraints, self.deny = text, selector, tag, constraints, deny

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)

    @classmethod
    def parse(cls, text: str) -> Rule:
        if len(text) > MAX_PATTERN:
            raise _bad(text, f"longer than {MAX_PATTERN} characters")
        head, paren, spec = text.partition("(")
        if paren and not spec.endswith(")"):
            raise _bad(text, "text after the specifier's ')'" if ")" in spec else "missing ')'")
        selector = "".join(head.split())  # names never hold spaces: `{a, b}` means `{a,b}`
        tag = selector.startswith("#")
        selector = selector[1:] if tag else selector
        if not selector:
            raise _bad(text, "empty tag" if tag else "empty pattern")
        _compile(selector)
        constraints: list[tuple[str, str]] = []
        deny = False
        for item in _split(spec[:-1], ",") if paren else []:
            key, eq, value = (part.strip() for part in item.partition("="))
            if key == "$deny" and not eq:
                deny = True
            elif key == "$policy" and value == "allow":
                pass  # the default for a listed pattern; accepted for compatibility
            elif key.startswith("$") or not key or not eq:
                raise _bad(text, f"unknown specifier entry '{item.strip()}'")
            else:
                _compile(value)
                constraints.append((key, value))
        return cls(text, selector, tag, tuple(constraints), deny)

    @property
    def literal(self) -> bool:
        """A plain name (no tag, wildcard, class, brace): only these admit hidden skills."""
        return not self.tag and not (_GLOB_CHARS & set(self.selector))

    def selects(self, c: Candidate) -> bool:
        if self.tag:
            return any(matches_pattern(self.selector, t) for t in c.tags)
        return matches_pattern(self.selector, c.name)

    def unmet(self, args: Mapping[str, Any], action: tuple[str, ...] = ()) -> str | None:
        """Why `args` fail this rule's constraints (values are never quoted: they may be secret).

        A rule that constrains arguments at all must constrain every action argument present:
        otherwise an unconstrained spelling could change what the call does. A Compound value (a
        shell line) is admitted only when every one of its commands matches and none is a problem."""
        if self.constraints:
            constrained = {key for key, _ in self.constraints}
            for key in action:
                if key not in constrained and args.get(key) is not None:
                    return (f"argument '{key}' changes what '{self.selector}' does and is not "
                            f"constrained by '{self.text}'")
        for key, want in self.constraints:
            if key not in args:
                return f"argument '{key}' is missing, required by '{self.text}'"
            value = args[key]
            if isinstance(value, Compound):  # a grant must admit every command of a shell line
                if value.problem is not None:
                    return f"argument '{key}' cannot be reduced to plain commands: {value.problem}"
                for k, one in enumerate(value, start=1):
                    if not matches_pattern(want, one):
                        which = f"command {k} of {len(value)} in " if len(value) > 1 else ""
                        return f"argument '{key}': {which}it does not match '{want}' in '{self.text}'"
                continue
            if not matches_pattern(want, _text(value)):
                return f"argument '{key}' does not match '{want}' in '{self.text}'"
        return None

    def fires(self, args: Mapping[str, Any]) -> bool:
        """Whether this rule, as a trust rule or a `$deny` pattern, matches the call's arguments:
        every constraint holds, where a Compound value (a shell line) holds when ANY of its commands
        matches, or always when it cannot be reduced to plain commands. Selection is not checked."""
        for key, want in self.constraints:
            if key not in args:
                return False
            value = args[key]
            if isinstance(value, Compound):
                if value.problem is None and not any(matches_pattern(want, one) for one in value):
                    return False
            elif not matches_pattern(want, _text(value)):
                return False
        return True


def _text(value: Any) -> str:
    """An argument as a pattern sees it: strings as they are, anything else as canonical JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _hidden_or_self(policy: Policy, c: Candidate) -> str | None:
    if c.name == policy.owner:
        return f"'{c.name}' is the calling skill itself: name it explicitly to allow recursion"
    if c.hidden:
        return f"'{c.name}' is hidden: name it explicitly in allowed-tools"
    return None


class Policy:
    """The parsed allowed-tools of one skill. `None` source = no allowed-tools declared."""

    FIELDS = ("rules", "owner", "source")
    __slots__ = FIELDS
    rules: tuple[Rule, ...] | None
    owner: str
    source: str | None

    def __init__(self, rules: tuple[Rule, ...] | None, owner: str, source: str | None) -> None:
        self.rules, self.owner, self.source = rules, owner, source

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)

    @classmethod
    def parse(cls, text: str | list[str] | None, owner: str) -> Policy:
        if text is None:
            return cls(None, owner, None)
        items = [text] if isinstance(text, str) else list(text)
        try:
            rules: list[Rule] = []
            for item in items:
                if not item.strip() and not isinstance(text, str):
                    raise _bad(item, "empty pattern")
                for tok in split_patterns(item):  # other agents' names (`Read`, `Bash(git:*)`) map
                    if not is_foreign(tok):
                        rules.append(Rule.parse(tok))
                        continue
                    from agentapps.tools.foreign import translate

                    rules.extend(Rule.parse(p) for p in translate(tok).patterns)
        except UsageError as exc:
            raise UsageError(f"Skill '{owner}' allowed-tools: {exc.message}", skill=owner) from None
        return cls(tuple(rules), owner, " ".join(items))

    def decide(self, c: Candidate, args: Mapping[str, Any]) -> Decision:
        if self.rules is None and c.name != self.owner and not c.hidden:
            return _UNDECLARED  # the common call: nothing declared, nothing special
        special = _hidden_or_self(self, c)
        if self.rules is None:
            return Decision(False, special or "")
        for rule in self.rules:
            if rule.deny and rule.selects(c) and rule.fires(args):  # deny: its own keys, any command
                return Decision(False, f"denied by '{rule.text}'{unreduced(rule.constraints, args)}")
        parts = one_by_one(args)
        if parts is None:
            return self._admit(c, args, special)
        for k, part in enumerate(parts, start=1):  # a shell line: each command by some pattern
            decision = self._admit(c, part, special)
            if not decision.allowed:
                return Decision(False, f"command {k} of {len(parts)}: {decision.reason}")
        return Decision(True, f"each of its {len(parts)} commands allowed by allowed-tools")

    def _admit(self, c: Candidate, args: Mapping[str, Any], special: str | None) -> Decision:
        assert self.rules is not None
        miss: str | None = None
        for rule in self.rules:
            if rule.deny or not rule.selects(c):
                continue
            if special and not (rule.literal and rule.selector == c.name):
                miss = miss or special
                continue
            why = rule.unmet(args, c.action)
            if why is None:
                return Decision(True, f"allowed by '{rule.text}'")
            miss = why  # a failed constraint is the most specific explanation
        shown = " ".join((self.source or "").split())
        return Decision(False, miss or f"no pattern in allowed-tools '{shown}' matches '{c.name}'")


_UNDECLARED = Decision(True, "no allowed-tools declared")



def reads_args(policies: Sequence[Policy]) -> bool:
    """Whether any of `policies` declares allowed-tools (only those look at a call's arguments)."""
    for policy in policies:
        if policy.rules is not None:
            return True
    return False


def check_chain(policies: Sequence[Policy], c: Candidate, args: Mapping[str, Any]) -> None:
    """Raise DeniedError unless EVERY policy in the chain admits the call (the effective permission
    of a nested call is the intersection of all callers' allowed-tools: no widening)."""
    for policy in policies:
        decision = policy.decide(c, args)
        if not decision.allowed:
            raise DeniedError(
                f"Skill '{policy.owner}' may not call '{c.name}': {decision.reason}.",
                skill=policy.owner,
            )
