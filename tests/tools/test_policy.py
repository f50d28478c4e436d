"""Specification of allowed-tools: the glob/tag/specifier table, the chain and its properties."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentapps.errors import DeniedError, UsageError
from agentapps.tools.compound import Compound
from agentapps.tools.policy import (
    Candidate,
    Policy,
    Rule,
    check_chain,
    matches_pattern,
)

OWNER = "caller"
HIDDEN = True


def case(
    id: str,
    allowed_tools: str | list[str] | None,
    name: str,
    expected: bool | None,
    reason: str,
    *,
    tags: tuple[str, ...] = (),
    hidden: bool = False,
    args: dict[str, Any] | None = None,
    error: str | None = None,
) -> Any:
    candidate = Candidate(name, tags, hidden)
    return pytest.param(allowed_tools, candidate, args or {}, expected, reason, error, id=id)


# fmt: off
TABLE = [
    # --- plain globs -------------------------------------------------------------------------
    case("star-admits-any-visible-skill", "*", "http", True, "allowed by '*'"),
    case("exact-name", "file-read", "file-read", True, "allowed by 'file-read'"),
    case("exact-name-admits-nothing-else", "file-read", "file-write", False,
         "no pattern in allowed-tools 'file-read' matches 'file-write'"),
    case("prefix-wildcard", "file-*", "file-write", True, "allowed by 'file-*'"),
    case("prefix-wildcard-matches-empty-rest", "file-*", "file-", True, "allowed by 'file-*'"),
    case("prefix-wildcard-needs-the-dash", "file-*", "filesystem", False, "no pattern"),
    case("suffix-wildcard", "*-read", "file-read", True, "allowed by '*-read'"),
    case("question-mark-is-one-char", "file?", "files", True, "allowed by 'file?'"),
    case("question-mark-is-not-zero-chars", "file?", "file", False, "no pattern"),
    case("question-mark-is-not-many-chars", "file?", "file-read", False, "no pattern"),
    case("class", "file-[rw]*", "file-write", True, "allowed by 'file-[rw]*'"),
    case("class-excludes-others", "file-[rw]*", "file-list", False, "no pattern"),
    case("negated-class-bang", "file-[!r]*", "file-list", True, "allowed by 'file-[!r]*'"),
    case("negated-class-excludes", "file-[!r]*", "file-read", False, "no pattern"),
    case("negated-class-caret", "file-[^r]*", "file-read", False, "no pattern"),
    case("class-range", "file-[a-m]*", "file-list", True, "allowed by 'file-[a-m]*'"),
    case("braces", "{file-read,file-write}", "file-write", True, "allowed by '{file-read,"),
    case("braces-exclude-others", "{file-read,file-write}", "file-list", False, "no pattern"),
    case("nested-braces-inner", "{file-{read,write},http}", "file-read", True, "allowed by"),
    case("nested-braces-outer", "{file-{read,write},http}", "http", True, "allowed by"),
    case("nested-braces-exclude", "{file-{read,write},http}", "file-list", False, "no pattern"),
    case("spaces-inside-braces-do-not-split", "{file-read, http}", "http", True,
         "allowed by '{file-read, http}'"),
    case("several-patterns-match-reported", "file-read http", "http", True, "allowed by 'http'"),
    # --- tags --------------------------------------------------------------------------------
    case("tag", "#net", "http", True, "allowed by '#net'", tags=("net",)),
    case("tag-absent", "#net", "file-read", False, "no pattern", tags=("fs",)),
    case("tag-is-not-a-name", "#http", "http", False, "no pattern"),
    case("tag-glob", "#meta-*", "skill-list", True, "allowed by '#meta-*'", tags=("meta-x",)),
    # --- specifiers: argument constraints ----------------------------------------------------
    case("constraint-met", "agent(allowedTools=file-read)", "agent", True, "allowed by",
         args={"allowedTools": "file-read"}),
    case("constraint-unmet", "agent(allowedTools=file-read)", "agent", False,
         "argument 'allowedTools' does not match 'file-read'", args={"allowedTools": "shell"}),
    case("constraint-on-missing-arg-fails", "agent(allowedTools=file-read)", "agent", False,
         "argument 'allowedTools' is missing", args={"prompt": "hi"}),
    case("two-constraints-met", "state(op=set,key=user.*)", "state", True, "allowed by",
         args={"op": "set", "key": "user.name"}),
    case("two-constraints-one-unmet", "state(op=set,key=user.*)", "state", False,
         "argument 'key' does not match 'user.*'", args={"op": "set", "key": "team.x"}),
    case("braces-in-value", "finish(op={finish,fail})", "finish", True, "allowed by",
         args={"op": "fail"}),
    case("braces-in-value-exclude", "finish(op={finish,fail})", "finish", False,
         "argument 'op' does not match", args={"op": "retry"}),
    case("wildcard-in-value", "http(url=https://*)", "http", True, "allowed by",
         args={"url": "https://example.com/a"}),
    case("wildcard-in-value-exclude", "http(url=https://*)", "http", False,
         "argument 'url' does not match", args={"url": "http://example.com"}),
    case("bool-arg-is-json-encoded", "http(follow=true)", "http", True, "allowed by",
         args={"follow": True}),
    case("int-arg-is-json-encoded", "http(retries=[0-3])", "http", True, "allowed by",
         args={"retries": 3}),
    case("int-arg-out-of-class", "http(retries=[0-3])", "http", False,
         "argument 'retries' does not match", args={"retries": 7}),
    case("none-arg-is-null", "http(body=null)", "http", True, "allowed by", args={"body": None}),
    case("unconstrained-pattern-still-admits", "http(method=GET) http", "http", True,
         "allowed by 'http'", args={"method": "POST"}),
    case("policy-allow-is-accepted-and-ignored", "http($policy=allow)", "http", True,
         "allowed by 'http($policy=allow)'"),
    # --- $deny -------------------------------------------------------------------------------
    case("deny-beats-wildcard-allow", "file-* file-write($deny)", "file-write", False,
         "denied by 'file-write($deny)'"),
    case("deny-spares-rest", "file-* file-write($deny)", "file-read", True, "allowed by 'file-*'"),
    case("deny-beats-allow-in-any-order", "file-write($deny) file-write", "file-write", False,
         "denied by 'file-write($deny)'"),
    case("deny-with-constraint", "http http(method=DELETE,$deny)", "http", False,
         "denied by 'http(method=DELETE,$deny)'", args={"method": "DELETE"}),
    case("deny-constraint-unmet-leaves-allow", "http http(method=DELETE,$deny)", "http", True,
         "allowed by 'http'", args={"method": "GET"}),
    case("deny-constraint-on-missing-arg-does-not-match", "http http(method=DELETE,$deny)",
         "http", True, "allowed by 'http'"),
    case("deny-by-tag", "* #danger($deny)", "rm", False, "denied by '#danger($deny)'",
         tags=("danger",)),
    case("deny-reaches-hidden-skills-through-wildcards", "shell s*($deny)", "shell", False,
         "denied by 's*($deny)'", hidden=HIDDEN),
    # --- hidden skills -----------------------------------------------------------------------
    case("hidden-named-literally", "shell", "shell", True, "allowed by 'shell'", hidden=HIDDEN),
    case("hidden-not-by-star", "*", "shell", False, "'shell' is hidden", hidden=HIDDEN),
    case("hidden-not-by-wildcard", "sh*", "shell", False, "'shell' is hidden", hidden=HIDDEN),
    case("hidden-not-by-question", "shel?", "shell", False, "'shell' is hidden", hidden=HIDDEN),
    case("hidden-not-by-class", "s[h]ell", "shell", False, "'shell' is hidden", hidden=HIDDEN),
    case("hidden-not-by-braces", "{shell,a}", "shell", False, "'shell' is hidden", hidden=HIDDEN),
    case("hidden-not-by-tag", "#exec", "shell", False, "'shell' is hidden", tags=("exec",),
         hidden=HIDDEN),
    case("hidden-not-by-absence", None, "shell", False, "'shell' is hidden", hidden=HIDDEN),
    case("hidden-literal-with-constraint", "shell(cmd=ls*)", "shell", True, "allowed by",
         hidden=HIDDEN, args={"cmd": "ls -la"}),
    case("hidden-literal-constraint-unmet", "* shell(cmd=ls*)", "shell", False,
         "argument 'cmd' does not match 'ls*'", hidden=HIDDEN, args={"cmd": "rm -rf /"}),
    # --- self-calls --------------------------------------------------------------------------
    case("self-not-by-absence", None, OWNER, False, "'caller' is the calling skill itself"),
    case("self-not-by-star", "*", OWNER, False, "'caller' is the calling skill itself"),
    case("self-not-by-wildcard", "call*", OWNER, False, "'caller' is the calling skill itself"),
    case("self-named-literally", "caller", OWNER, True, "allowed by 'caller'"),
    # --- absent, empty and list input --------------------------------------------------------
    case("absent-admits-visible-skills", None, "http", True, "no allowed-tools declared"),
    case("empty-string-admits-nothing", "", "http", False, "no pattern in allowed-tools ''"),
    case("yaml-list", ["file-read", "http"], "http", True, "allowed by 'http'"),
    case("yaml-list-message-joins-items", ["file-read", "file-list"], "http", False,
         "no pattern in allowed-tools 'file-read file-list' matches 'http'"),
    case("yaml-list-item-with-specifier", ["agent(allowedTools=file-read, $policy=allow)"], "agent",
         True, "allowed by", args={"allowedTools": "file-read"}),
    case("multiline-text", "file-read\n  http", "http", True, "allowed by 'http'"),
    # --- malformed patterns ------------------------------------------------------------------
    case("unclosed-brace", "file-read {file-write,http", "http", None, "", error="missing '}'"),
    case("stray-brace", "file-read}", "http", None, "", error="unbalanced '}'"),
    case("unclosed-paren", "agent(allowedTools=x", "agent", None, "", error="missing ')'"),
    case("stray-paren", "agent)", "agent", None, "", error="'agent)': unbalanced ')'"),
    case("unclosed-bracket", "file-[rw", "file-read", None, "", error="missing ']'"),
    case("empty-class", "file-[]", "file-read", None, "", error="empty class"),
    case("empty-selector", "(x=1)", "x", None, "", error="'(x=1)': empty pattern"),
    case("empty-tag", "#", "x", None, "", error="empty tag"),
    case("empty-list-item", ["file-read", " "], "x", None, "", error="empty pattern"),
    case("text-after-specifier", "agent(x=1)y", "agent", None, "", error="text after"),
    case("constraint-without-value", "agent(x)", "agent", None, "", error="specifier entry 'x'"),
    case("misspelt-meta-key-is-refused", "shell($dney)", "shell", None, "",
         error="specifier entry '$dney'"),
    case("empty-specifier-entry", "agent(x=1,)", "agent", None, "", error="specifier entry ''"),
    case("unclosed-brace-in-value", "agent(x={a,b)", "agent", None, "", error="unbalanced ')'"),
    case("too-long", "x" * 1001, "x", None, "", error="longer than 1000 characters"),
    case("brace-bomb", "{a,b}" * 9, "a", None, "", error="more than 256 alternatives"),
    case("brace-nesting-bomb", "{" * 40 + "a" + "}" * 40, "a", None, "", error="nested deeper"),
]
# fmt: on


@pytest.mark.parametrize(
    ("allowed_tools", "candidate", "args", "expected", "reason", "error"), TABLE
)
def test_allowed_tools_table(
    allowed_tools: str | list[str] | None,
    candidate: Candidate,
    args: dict[str, Any],
    expected: bool | None,
    reason: str,
    error: str | None,
) -> None:
    if error is not None:
        with pytest.raises(UsageError, match="allowed-tools") as info:
            Policy.parse(allowed_tools, OWNER)
        assert error in info.value.message
        assert f"Skill '{OWNER}'" in info.value.message
        assert info.value.exit_code == 2
        return
    decision = Policy.parse(allowed_tools, OWNER).decide(candidate, args)
    assert (decision.allowed, reason in decision.reason) == (expected, True), decision.reason


def test_table_has_at_least_45_cases() -> None:
    assert len(TABLE) >= 45


# --- check_chain: the intersection, and its messages ---------------------------------------------


def test_chain_denial_names_caller_callee_and_patterns() -> None:
    review = Policy.parse("file-read file-list", "review")
    with pytest.raises(DeniedError) as info:
        check_chain([review], Candidate("shell"), {})
    assert info.value.exit_code == 3
    assert info.value.skill == "review"
    assert str(info.value) == (
        "Skill 'review' may not call 'shell': "
        "no pattern in allowed-tools 'file-read file-list' matches 'shell'."
    )


def test_chain_names_the_inner_caller_that_narrows() -> None:
    outer = Policy.parse("*", "outer")
    inner = Policy.parse("file-* file-write($deny)", "inner")
    with pytest.raises(
        DeniedError,
        match=r"^Skill 'inner' may not call 'file-write': denied by "
        r"'file-write\(\$deny\)'\.$",
    ):
        check_chain([outer, inner], Candidate("file-write"), {})


def test_chain_names_the_outer_caller_when_it_denies_first() -> None:
    outer = Policy.parse("file-read", "outer")
    inner = Policy.parse("*", "inner")
    with pytest.raises(DeniedError, match="^Skill 'outer' may not call 'http': "):
        check_chain([outer, inner], Candidate("http"), {})


def test_chain_message_says_how_to_admit_a_hidden_skill() -> None:
    with pytest.raises(DeniedError, match="'shell' is hidden: name it explicitly"):
        check_chain([Policy.parse("*", "agent")], Candidate("shell", hidden=True), {})


def test_chain_denial_message_is_one_line_and_omits_argument_values() -> None:
    policy = Policy.parse("http(token=public-*)", "fetch")
    with pytest.raises(DeniedError) as info:
        check_chain([policy], Candidate("http"), {"token": "s3cr3t\nvalue"})
    assert "\n" not in str(info.value)
    assert "s3cr3t" not in str(info.value)
    assert "argument 'token' does not match 'public-*'" in str(info.value)


def test_empty_chain_admits_a_top_level_call() -> None:
    check_chain([], Candidate("shell", hidden=True), {})


def test_chain_admits_when_every_caller_admits() -> None:
    chain = [Policy.parse(None, "a"), Policy.parse("file-*", "b"), Policy.parse("file-read", "c")]
    check_chain(chain, Candidate("file-read"), {})


def test_constrained_sub_agent_gets_at_most_what_the_constraint_names() -> None:
    caller = Policy.parse("agent(allowedTools=file-read) file-read http", "review")
    sub_agent = Policy.parse("file-read", "agent")
    check_chain([caller], Candidate("agent"), {"allowedTools": "file-read"})
    with pytest.raises(DeniedError, match="argument 'allowedTools' does not match"):
        check_chain([caller], Candidate("agent"), {"allowedTools": "file-read http"})
    check_chain([caller, sub_agent], Candidate("file-read"), {})
    with pytest.raises(DeniedError, match="^Skill 'agent' may not call 'http'"):
        check_chain([caller, sub_agent], Candidate("http"), {})
    with pytest.raises(DeniedError, match="^Skill 'review' may not call 'file-write'"):
        check_chain([caller, sub_agent], Candidate("file-write"), {})


# --- matches_pattern: the bare glob helper -------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("*@mycompany.com", "ann@mycompany.com", True),
        ("*@mycompany.com", "ann@mycompany.com.evil", False),
        ("a*b*c", "aXbYc", True),
        ("a*b*c", "abcb", False),
        ("*a*b", "ab", True),
        ("**", "", True),
        ("src/*", "src/a/b.py", True),  # `*` is not path-aware: names have no `/`
        ("line*", "line1\nline2", True),
        (r"\*", "*", True),
        (r"\*", "x", False),
        ("{a,}b", "b", True),
        ("{}x", "x", True),
        ("a.b", "aXb", False),  # regex metacharacters are literal
        ("(x)", "(x)", True),
        ("{a,b}" * 8, "abbabaab", True),
        ("{a,b}" * 8, "abbabaa", False),
    ],
)
def test_matches_pattern(pattern: str, text: str, expected: bool) -> None:
    assert matches_pattern(pattern, text) is expected


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("*/*/*.txt", "/" * 64_000),
        ("*a*a*a*a*a*a*a*b", "a" * 64_000),
        ("{*a,*b}*c*d", "ab" * 32_000),
    ],
)
def test_adversarial_values_are_matched_in_linear_time(pattern: str, text: str) -> None:
    start = time.monotonic()
    assert not matches_pattern(pattern, text)
    assert time.monotonic() - start < 2.0


@pytest.mark.parametrize("pattern", ["{a,b", "a}", "[ab", "a\\", "x" * 1001, "{a,b}" * 9])
def test_matches_pattern_refuses_malformed_globs(pattern: str) -> None:
    with pytest.raises(UsageError, match="Malformed pattern"):
        matches_pattern(pattern, "a")


def test_only_plain_names_are_literal() -> None:
    literal = [
        Rule.parse(t).literal for t in ["shell", "shell(cmd=ls)", "sh*", "#shell", "{shell}"]
    ]
    assert literal == [True, True, False, False, False]


# --- properties: no widening ---------------------------------------------------------------------

NAMES = ["file-read", "file-write", "shell", "http", "agent"]
TAGS = {
    "file-read": ("fs",),
    "file-write": ("fs", "danger"),
    "shell": ("danger",),
    "http": ("net",),
}
# fmt: off
PATTERNS = [
    "*", "file-*", "file-read", "file-write", "shell", "http", "agent", "{shell,http}",
    "file-[rw]*",
    "#fs", "#net", "#danger($deny)", "shell($deny)", "*($deny)", "agent(mode=fast)",
    "http(mode={fast,slow})", "file-*(mode=fast,$deny)", "?gent", "[!f]*",
]
# fmt: on


def candidate(name: str) -> Candidate:
    return Candidate(name, TAGS.get(name, ()), hidden=name == "shell")


policies = st.builds(
    lambda patterns, owner: Policy.parse(None if patterns is None else " ".join(patterns), owner),
    st.none() | st.lists(st.sampled_from(PATTERNS), max_size=4),
    st.sampled_from(NAMES + ["review"]),
)
calls = st.tuples(
    st.sampled_from(NAMES).map(candidate),
    st.fixed_dictionaries({}, optional={"mode": st.sampled_from(["fast", "slow", "other"])}),
)


def admitted(chain: list[Policy], callee: Candidate, args: dict[str, Any]) -> bool:
    try:
        check_chain(chain, callee, args)
    except DeniedError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(chain=st.lists(policies, min_size=1, max_size=4), call=calls)
def test_chain_admits_exactly_the_intersection(
    chain: list[Policy], call: tuple[Candidate, dict[str, Any]]
) -> None:
    callee, args = call
    assert admitted(chain, callee, args) == all(p.decide(callee, args).allowed for p in chain)


@settings(max_examples=300, deadline=None)
@given(
    chain=st.lists(policies, min_size=1, max_size=3),
    extra=policies,
    where=st.integers(min_value=0, max_value=3),
    call=calls,
)
def test_adding_a_caller_never_turns_a_denial_into_an_admission(
    chain: list[Policy], extra: Policy, where: int, call: tuple[Candidate, dict[str, Any]]
) -> None:
    callee, args = call
    longer = chain[:where] + [extra] + chain[where:]
    assert admitted(longer, callee, args) <= admitted(chain, callee, args)


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(st.sampled_from(PATTERNS), max_size=4),
    extra=st.sampled_from(PATTERNS),
    owner=st.sampled_from(NAMES),
    call=calls,
)
def test_a_deny_pattern_only_narrows_and_an_allow_pattern_only_widens(
    patterns: list[str], extra: str, owner: str, call: tuple[Candidate, dict[str, Any]]
) -> None:
    callee, args = call
    before = Policy.parse(" ".join(patterns), owner).decide(callee, args).allowed
    after = Policy.parse(" ".join([*patterns, extra]), owner).decide(callee, args).allowed
    if Rule.parse(extra).deny:
        assert after <= before
    else:
        assert after >= before


@settings(max_examples=200, deadline=None)
@given(patterns=st.lists(st.sampled_from(PATTERNS), max_size=4), call=calls)
def test_no_wildcard_ever_admits_a_hidden_skill_or_the_caller_itself(
    patterns: list[str], call: tuple[Candidate, dict[str, Any]]
) -> None:
    callee, args = call
    policy = Policy.parse(" ".join(patterns), owner="agent")
    named = any(Rule.parse(p).literal and Rule.parse(p).selector == callee.name for p in patterns)
    if (callee.hidden or callee.name == "agent") and not named:
        assert not policy.decide(callee, args).allowed


@pytest.mark.parametrize(("text", "why"), [("bad(((", "missing ')'"), ("bad(x)y", "text after the specifier's ')'")])
def test_a_malformed_specifier_says_what_is_wrong_with_it(text, why):
    with pytest.raises(UsageError, match=re.escape(f"Malformed pattern '{text}': {why}")):
        Rule.parse(text)


SHELL = Candidate("shell", hidden=True, action=("command", "input"))
TWO = Compound(("git status", "touch P"))
BAD = Compound(("git x",), "'git -c alias.x' defines a git alias, which can run any command")


@pytest.mark.parametrize(("allowed", "command", "admitted"), [
    ("shell(command=git *)", Compound(("git status",)), True),
    ("shell(command=git *)", TWO, False),  # every command must be admitted
    ("shell(command=git *) shell(command=touch *)", TWO, True),  # each by any pattern
    ("shell(command={git *,touch *})", TWO, True),
    ("shell(command=*)", BAD, False),  # what cannot be reduced: no constraint admits it
    ("shell", BAD, True),  # an unconstrained grant admits every command line
    ("shell shell(command=touch *, $deny)", TWO, False),  # a deny pattern fires on any command
    ("shell shell(command=rm *, $deny)", BAD, False),  # ... and on what cannot be reduced
    ("shell shell(command=rm *, $deny)", TWO, True),
    ("shell(command=git *)", Compound(()), True),  # a line of comments runs nothing
])
def test_a_grant_admits_a_shell_line_only_when_it_admits_every_command(
    allowed: str, command: Compound, admitted: bool
) -> None:
    assert Policy.parse(allowed, "caller").decide(SHELL, {"command": command}).allowed is admitted


@pytest.mark.parametrize(("rule", "command", "fires"), [
    ("shell(command=touch *)", TWO, True),  # any command
    ("shell(command=git push*)", TWO, False),
    ("shell(command=git push*)", BAD, True),  # what cannot be reduced fires every rule
    ("shell(command=git push*, input=*)", BAD, False),  # ... but not one whose other keys fail
    ("shell", TWO, True),
])
def test_a_trust_rule_fires_when_any_command_of_a_shell_line_matches(rule: str, command: Compound, fires: bool) -> None:
    assert Rule.parse(rule).fires({"command": command}) is fires


def test_a_refused_shell_line_says_which_command_and_why_in_one_line() -> None:
    policy = Policy.parse("shell(command=git *)", "caller")
    assert policy.decide(SHELL, {"command": TWO}).reason.startswith("command 2 of 2: ")
    why = policy.decide(SHELL, {"command": BAD}).reason
    assert why == ("argument 'command' cannot be reduced to plain commands: "
                   "'git -c alias.x' defines a git alias, which can run any command")
    denied = Policy.parse("shell shell(command=rm *, $deny)", "caller").decide(SHELL, {"command": BAD}).reason
    assert "cannot be reduced" in denied and "\n" not in denied
