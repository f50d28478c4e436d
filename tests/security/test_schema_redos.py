"""A slow schema `pattern` cannot hang a run: patterns are matched by RE2, in linear time.

Each of these patterns backtracks for minutes in Python's `re` on the input given; here every run
ends in well under a second of matching, with the right verdict, on the fast path and on the
jsonschema path alike (params and returns, `pattern` and `patternProperties`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

# (pattern, adversarial input, does it match?)
SLOW = [
    ("(a|aa)*$", "a" * 60 + "!", True),
    ("(.*a){25}$", "a" * 60 + "!", False),
    ("^(a?){30}a{30}$", "a" * 30, True),
    ("^(a+)+$", "a" * 60 + "!", False),
    ("^(1|1?)+$", "1" * 60 + "!", False),
]
LIMIT = 8.0  # seconds for a whole CLI run; each of these hangs for minutes under Python's re


def _skill(project, schema_key: str, schema: dict) -> None:
    meta = json.dumps({schema_key: schema})
    project.write("slow.skill.py", f'''
        frontmatter = {{"name": "slow", "metadata": {meta}}}

        def run(ctx, args):
            return args.get("echo", "ran")
        ''')


def _run(project, *argv: str):
    started = time.monotonic()
    result = project.cli("run", *argv, timeout=LIMIT * 3)
    return result, time.monotonic() - started


@pytest.mark.parametrize(("pattern", "text", "matches"), SLOW, ids=[p for p, _, _ in SLOW])
@pytest.mark.parametrize("path", ["fast", "jsonschema"])
def test_slow_params_pattern_ends_quickly_with_the_right_verdict(project, pattern, text, matches, path):
    prop = {"type": "string", "pattern": pattern}
    if path == "jsonschema":  # allOf is outside the fast path's keywords
        prop = {"allOf": [prop]}
    _skill(project, "params", {"type": "object", "properties": {"s": prop}})
    result, took = _run(project, "slow", "--s", text)
    assert took < LIMIT
    if matches:
        assert (result.returncode, result.stdout) == (0, "ran\n"), result.stderr
    else:
        assert result.returncode == 2 and "does not match" in result.stderr and result.stdout == ""


@pytest.mark.parametrize(("pattern", "text", "matches"), SLOW, ids=[p for p, _, _ in SLOW])
def test_slow_pattern_properties_and_returns_end_quickly(project, pattern, text, matches):
    _skill(project, "params", {"type": "object", "patternProperties": {pattern: {"type": "integer"}}})
    args = json.dumps({text: "not an integer"})
    result, took = _run(project, "--arg-json", args, "slow")
    assert took < LIMIT
    assert result.returncode == (2 if matches else 0), result.stderr
    _skill(project, "returns", {"type": "string", "pattern": pattern})
    project.write("slow.skill.py", (project.root / "slow.skill.py").read_text().replace(
        'args.get("echo", "ran")', repr(text)))
    result, took = _run(project, "slow")
    assert took < LIMIT
    assert result.returncode == (0 if matches else 1), result.stderr


@pytest.mark.parametrize(("pattern", "why"), [
    ("(?=a)a", "lookahead"), ("(?<!a)b", "lookbehind"), ("(a)\\1", "backreferences"), ("a{1001}", "over 1000"),
    ("x" * 1001, "longer than 1000"),
])
@pytest.mark.parametrize("path", ["fast", "jsonschema"])
def test_patterns_re2_cannot_run_are_a_configuration_error(project, pattern, why, path):
    prop = {"type": "string", "pattern": pattern}
    _skill(project, "params", {"type": "object", "properties": {"s": {"allOf": [prop]} if path == "jsonschema" else prop}})
    result, _ = _run(project, "slow", "--s", "a")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {project.root / 'slow.skill.py'}:1: Skill 'slow' params schema has a 'pattern' "
                           "that cannot be matched in linear time")
    assert why in line


def test_safe_patterns_still_validate_and_ecma_escapes_work(project):
    _skill(project, "params", {"type": "object", "properties": {
        "s": {"type": "string", "pattern": "^[a-z]+$"}, "e": {"type": "string", "pattern": "^\\u00e9\\u{1F600}?$"}}})
    assert project.cli("run", "slow", "--s", "abc").stdout == "ran\n"
    bad = project.cli("run", "slow", "--s", "ABC")
    assert bad.returncode == 2 and "does not match" in bad.stderr
    assert project.cli("run", "slow", "--e", "é😀").returncode == 0
    assert project.cli("run", "slow", "--e", "e").returncode == 2


def test_a_lone_surrogate_in_an_argument_is_matched_not_crashed_on(project):
    _skill(project, "params", {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a.$"}}})
    result = project.cli("run", "--arg-json", '{"s": "a\\ud83d"}', "slow")
    assert result.returncode == 0, result.stderr


def test_a_code_skill_without_patterns_never_imports_re2(project):
    project.write("noop.skill.py", '''
        frontmatter = {"name": "noop", "metadata": {"params": {"type": "object", "properties": {"n": {"type": "string"}}}}}

        def run(ctx, args):
            return "ok"
        ''')
    code = ("import sys\nfrom agentapps.cli import main\n"
            "try:\n    main(['run', 'noop', '--n', 'x'])\nexcept SystemExit:\n    pass\n"
            "print('re2' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=project.root, env=project.env(),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.splitlines() == ["ok", "False"], result.stderr
