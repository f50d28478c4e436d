"""`<skill>.tests.yaml`: what a tests file may say, and every mistake in one refused at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentapps.errors import ConfigError
from agentapps.tools import testfile
from agentapps.tools.testfile import ABSENT, load_cases, skill_file_for


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "greet.tests.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_case_reads_with_its_defaults(tmp_path):
    path = write(tmp_path, "cases:\n  - name: Greets Ada!\n    args: {who: Ada}\n")
    [case] = load_cases(path)
    assert (case.name, case.line, case.args, case.exit, case.result is ABSENT) == ("Greets Ada!", 2, {"who": "Ada"},
                                                                                  "ok", True)
    assert case.script == tmp_path / "greet.greets-ada.turns.json"  # default: <stem>.<case>.turns.json
    assert case.timeout == 60


def test_every_expectation_reads(tmp_path):
    (tmp_path / "in.txt").write_text("x")
    path = write(tmp_path, """cases:
  - name: a
    script: recorded/a.json
    stdin: in.txt
    timeout: 5
    expect: {result: null, schema: {type: "null"}, predicate: is-null}
  - name: b
    expect: {exit: ArgsError, error: who}
  - name: c
    expect: {exit: 3}
""")
    a, b, c = load_cases(path)
    assert (a.result, a.schema, a.predicate, a.script, a.stdin, a.timeout) == (
        None, {"type": "null"}, "is-null", tmp_path / "recorded" / "a.json", tmp_path / "in.txt", 5.0)
    assert (b.exit, b.error, c.exit) == ("ArgsError", "who", 3)


# (the file's text, the line the error names, a part of its message)
BAD = [
    ("cases: [\n", 2, "not valid YAML"),
    ("- name: a\n", 1, "a mapping with a `cases` list"),
    ("cases:\n  - just text\n", 2, "Each case must be a mapping"),
    ("cases:\n  - args: {}\n", 2, "needs a `name`"),
    ("cases:\n  - name: a\n    expected: {result: 1}\n", 3, "unknown key `expected`"),
    ("cases:\n  - name: a\n    args: [1]\n", 3, "`args` must be a mapping"),
    ("cases:\n  - name: a\n    timeout: 0\n", 3, "`timeout` must be a positive number"),
    ("cases:\n  - name: a\n    stdin: missing.txt\n", 3, "`stdin` must name a file"),
    ("cases:\n  - name: a\n    expect:\n      reslt: 1\n", 4, "unknown expectation `reslt`"),
    ("cases:\n  - name: a\n    expect:\n      exit: Boom\n", 4, "names no error kind: 'Boom'"),
    ("cases:\n  - name: a\n    expect:\n      exit: true\n", 4, "`expect.exit` must be ok"),
    ("cases:\n  - name: a\n    expect:\n      schema: [1]\n", 4, "`expect.schema` must be a JSON Schema"),
    ("cases:\n  - name: a\n    expect:\n      predicate: Not A Name\n", 4, "`expect.predicate` must name a skill"),
    ("cases:\n  - name: a\n    expect:\n      exit: ArgsError\n      result: 1\n", 4, "expects a failure"),
    ("cases:\n  - name: a\n    expect:\n      error: boom\n", 4, "`expect.error` needs a failing `exit`"),
    ("cases:\n  - name: a\n  - name: a\n", 3, "Two cases are named 'a' (the first at line 2)"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD)
def test_a_bad_tests_file_is_refused_at_its_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_cases(path)
    assert caught.value.file == str(path) and caught.value.line == line, str(caught.value)
    assert message in caught.value.message


@pytest.mark.parametrize(("skill", "tests"), [("greet.skill.md", "greet.tests.yaml"),
                                              ("greet.skill.py", "greet.tests.yaml"),
                                              ("greet/SKILL.md", "greet/SKILL.tests.yaml")])
def test_a_tests_file_sits_beside_its_skill(tmp_path, skill, tests):
    skill_file = tmp_path / skill
    skill_file.parent.mkdir(parents=True, exist_ok=True)
    skill_file.write_text("x")
    assert testfile.tests_file_for(skill_file) == tmp_path / tests
    assert skill_file_for(tmp_path / tests) == skill_file
    assert skill_file_for(tmp_path / "other.tests.yaml") is None
