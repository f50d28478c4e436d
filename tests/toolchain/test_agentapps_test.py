"""`agentapps test` and the `skill-test` skill: cases run through the pipeline, judged by every kind
of expectation, in parallel; the report as lines, JSON and JUnit XML; the exit codes."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

ADD = '''
frontmatter = {
    "name": "add",
    "description": "Add two numbers.",
    "metadata": {
        "params": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                   "required": ["a", "b"], "additionalProperties": False},
    },
}


def run(ctx, args):
    return {"sum": args["a"] + args["b"]}
'''
IS_EVEN = '''
frontmatter = {"name": "is-even", "metadata": {"visibility": "hidden", "params": {"type": "object"}}}


def run(ctx, args):
    return True if args["result"]["sum"] % 2 == 0 else f"{args['result']['sum']} is odd ({args['args']})"
'''
RAN = '''
frontmatter = {{"name": "ran", "metadata": {{"visibility": "hidden", "params": {{"type": "object"}}}}}}


def run(ctx, args):
    open({mark!r}, "w").close()
    return True
'''
GREET = """
---
name: greet
description: Greet someone.
metadata:
  params: {type: object, properties: {who: {type: string}}, required: [who], additionalProperties: false}
---
Greet :arg[who] warmly.
"""
GREET_TURNS = json.dumps({"turns": [{"text": "Hi.", "code": "ctx.manager.finish('Hello, ' + memory.args.who + '!')"}]})


def cases(project, skill: str, text: str):
    return project.write(f"{skill}.tests.yaml", "cases:\n" + text.lstrip("\n"))


def run_json(project, *argv: str):
    done = project.cli("test", "--json", *argv)
    assert done.returncode in (0, 1), done.stderr
    return done, json.loads(done.stdout)


def test_one_line_per_case_a_diff_for_a_mismatch_a_summary_and_exit_1(project):
    project.write("add.skill.py", ADD)
    cases(project, "add", """
  - name: adds
    args: {a: 2, b: 3}
    expect: {result: {sum: 5}}
  - name: adds wrongly
    args: {a: 1, b: 2}
    expect: {result: {sum: 4}}
""")
    done = project.cli("test")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PASS add: adds (")
    assert lines[1].startswith("FAIL add: adds wrongly (")
    assert lines[2] == "     add.tests.yaml:5: the result differs from the expected one"
    assert '     -  "sum": 4' in lines and '     +  "sum": 3' in lines
    assert lines[-1] == "2 cases of 1 skill: 1 passed, 1 failed"


def test_every_case_passing_exits_0(project):
    project.write("add.skill.py", ADD)
    cases(project, "add", "  - name: adds\n    args: {a: 2, b: 3}\n    expect: {result: {sum: 5}}\n")
    done = project.cli("test", "add")
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "1 case of 1 skill: 1 passed, 0 failed")


# (args, expect, the reason it fails; None: it passes)
EXPECTATIONS = [
    ({"a": 2, "b": 3}, {"result": {"sum": 5}}, None),
    ({"a": 2, "b": 3}, {"result": {"sum": 5.0}}, None),  # JSON equality: 5 == 5.0
    ({"a": 2, "b": 3}, {"result": {"sum": 6}}, "the result differs from the expected one"),
    ({"a": 2, "b": 3}, {"schema": {"type": "object", "required": ["sum"]}}, None),
    ({"a": 2, "b": 3}, {"schema": {"type": "object", "properties": {"sum": {"maximum": 4}}}},
     "the result does not match expect.schema"),
    ({"a": 2, "b": 4}, {"predicate": "is-even"}, None),
    ({"a": 2, "b": 3}, {"predicate": "is-even"}, "predicate 'is-even' failed: 5 is odd ({'a': 2, 'b': 3})"),
    ({"a": 2}, {"exit": "ArgsError", "error": "'b' is required"}, None),
    ({"a": 2}, {"exit": "UsageError"}, None),  # a kind matches its subclasses
    ({"a": 2}, {"exit": 2}, None),
    ({"a": 2}, {"exit": "DeniedError"}, "expected exit DeniedError, got ArgsError (exit 2)"),
    ({"a": 2}, {"exit": 3}, "expected exit 3, got ArgsError (exit 2)"),
    ({"a": 2}, {"exit": "ArgsError", "error": "nothing like this"}, "expected an error containing 'nothing like this'"),
    ({"a": 2}, {}, "expected success, got ArgsError (exit 2)"),
    ({"a": 2, "b": 3}, {"exit": "ArgsError"}, "expected exit ArgsError, but the skill succeeded"),
]


@pytest.mark.parametrize(("args", "expect", "reason"), EXPECTATIONS)
def test_each_kind_of_expectation(project, args, expect, reason):
    project.write("add.skill.py", ADD)
    project.write("is-even.skill.py", IS_EVEN)
    cases(project, "add", f"  - name: the case\n    args: {json.dumps(args)}\n    expect: {json.dumps(expect)}\n")
    done, report = run_json(project)
    [case] = report["cases"]
    assert case["status"] == ("passed" if reason is None else "failed"), case
    assert done.returncode == (0 if reason is None else 1)
    if reason is not None:
        assert reason in case["reason"], case["reason"]


@pytest.mark.parametrize(("expect", "said"), [
    ({"predicate": "no-such-judge"}, "Case 'second' has `expect.predicate: no-such-judge`, a skill this project does not have."),
    ({"schema": {"type": "objekt"}}, "Case 'second' has an invalid `expect.schema`: 'objekt' is not valid"),
])
def test_a_case_that_cannot_be_judged_stops_the_run_before_any_case_runs(project, expect, said):
    project.write("add.skill.py", ADD)
    project.write("ran.skill.py", RAN.format(mark=str(project.root / "ran.txt")))
    cases(project, "add", f"""  - name: first
    args: {{a: 1, b: 1}}
    expect: {{predicate: ran}}
  - name: second
    args: {{a: 2, b: 3}}
    expect: {json.dumps(expect)}
""")
    done = project.cli("test")
    assert done.returncode == 2, done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: add.tests.yaml:5: Case 'second' ") and said in line, line  # where, once
    assert not (project.root / "ran.txt").exists()  # not even the good first case ran
    findings = json.loads(project.cli("check", "--json").stdout)["findings"]
    [bad] = [f for f in findings if f["code"] == "bad-tests"]
    assert (bad["path"], bad["line"], bad["severity"]) == ("add.tests.yaml", 5, "error") and said in bad["message"]


def test_a_markdown_skill_plays_its_recorded_turns(project):
    project.write("greet.skill.md", GREET)
    project.write("greet.turns.json", GREET_TURNS)
    cases(project, "greet", """
  - name: greets ada
    args: {who: Ada}
    script: greet.turns.json
    expect: {result: "Hello, Ada!"}
  - name: has no recording
    args: {who: Bob}
    expect: {result: "Hello, Bob!"}
""")
    _, report = run_json(project)
    assert [c["status"] for c in report["cases"]] == ["passed", "failed"]
    assert report["cases"][1]["reason"].startswith(
        "no recorded model turns at greet.has-no-recording.turns.json (beside the tests file): record them with "
        "'agentapps test --record'")
    assert report["summary"] == {**report["summary"], "cases": 2, "passed": 1, "failed": 1, "ok": False, "skills": 1}


def test_stdin_gives_a_file_as_the_input_arg(project):
    project.write("echo.skill.py", '''
frontmatter = {"name": "echo", "metadata": {"params": {"type": "object", "properties": {"input": {"type": "string"}}}}}


def run(ctx, args):
    return args["input"].upper()
''')
    project.write("note.txt", "hello\n")
    cases(project, "echo", "  - name: shouts\n    stdin: note.txt\n    expect: {result: \"HELLO\\n\"}\n")
    _, report = run_json(project)
    assert report["summary"]["ok"] is True, report


MEET = '''
import asyncio
from pathlib import Path

frontmatter = {"name": "meet", "metadata": {"params": {"type": "object", "properties": {"me": {"type": "string"}}}}}


async def run(ctx, args):
    """Arrive, then wait until the other case has arrived too: only cases that run at once can meet."""
    folder = Path(__file__).parent / "arrivals"
    (folder / args["me"]).touch()
    while len(list(folder.iterdir())) < 2:
        await asyncio.sleep(0.01)
    return "met"
'''


@pytest.mark.parametrize(("jobs", "statuses"), [("2", ["passed", "passed"]), ("1", ["failed", "passed"])])
def test_cases_run_at_once_up_to_jobs(project, jobs, statuses):
    project.write("meet.skill.py", MEET)
    (project.root / "arrivals").mkdir()
    cases(project, "meet", """
  - name: first
    args: {me: first}
    timeout: 0.5
    expect: {result: met}
  - name: second
    args: {me: second}
    timeout: 0.5
    expect: {result: met}
""")
    _, report = run_json(project, "-j", jobs)
    assert [c["status"] for c in report["cases"]] == statuses, report
    if jobs == "1":  # one at a time: the first waits alone until its timeout
        assert "took longer than its timeout of 0.5 s" in report["cases"][0]["reason"]


def test_junit_xml_is_written_for_ci(project):
    project.write("add.skill.py", ADD)
    cases(project, "add", """
  - name: adds
    args: {a: 2, b: 3}
    expect: {result: {sum: 5}}
  - name: "adds <wrongly> & loudly"
    args: {a: 1, b: 2}
    expect: {result: {sum: 4}}
""")
    done = project.cli("test", "--junit", "reports/junit.xml")
    assert done.returncode == 1
    root = ET.parse(project.root / "reports" / "junit.xml").getroot()
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == ("testsuites", "2", "1", "0")
    [suite] = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("add", "2", "1")
    passed, failed = suite.findall("testcase")
    assert (passed.get("name"), passed.get("classname"), passed.find("failure")) == ("adds", "add", None)
    assert failed.get("name") == "adds <wrongly> & loudly" and failed.get("line") == "5"
    failure = failed.find("failure")
    assert failure is not None and failure.get("message") == "the result differs from the expected one"
    assert '-  "sum": 4' in (failure.text or "")
    assert float(root.get("time") or "x") >= 0


def test_junit_xml_stays_well_formed_when_a_case_name_holds_control_characters(project):
    # a bell or a \x01 in a case name made the whole JUnit file unreadable to CI reporters
    project.write("add.skill.py", ADD)
    cases(project, "add", """
  - name: "adds \\x01 with a \\u0007 bell and \\uFFFF"
    args: {a: 1, b: 2}
    expect: {result: {sum: 4}}
""")
    done = project.cli("test", "--junit", "junit.xml")
    assert done.returncode == 1
    [case] = ET.parse(project.root / "junit.xml").getroot().iter("testcase")
    assert case.get("name") == "adds  with a  bell and "


def test_a_bad_tests_file_is_one_line_naming_file_and_line_and_runs_nothing(project):
    project.write("add.skill.py", ADD)
    cases(project, "add", "  - name: a\n    args: {a: 1, b: 2}\n  - name: b\n    expectt: {}\n")
    done = project.cli("test")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("error: add.tests.yaml:5: Case 'b': unknown key `expectt` "
                           "(a case has args, expect, name, script, stdin, timeout).\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["nosuch"], "Unknown skill 'nosuch'"),
    (["add"], "Skill 'add' has no tests: write add.tests.yaml beside"),
    (["nowhere/"], "No such skill, file or folder: 'nowhere/'"),
    (["-j", "0"], "--jobs must be at least 1"),
    (["--model", "x"], "--model chooses the model to record from: use it with --record"),
])
def test_usage_errors_exit_2(project, argv, message):
    project.write("add.skill.py", ADD)
    done = project.cli("test", *argv)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr and done.stderr.count("\n") == 1


def test_a_project_without_tests_says_how_to_write_them(project):
    done = project.cli("test")
    expected = "no test cases: write <skill>.tests.yaml beside a skill (docs/toolchain.md)\n"
    assert (done.returncode, done.stdout) == (0, expected)


def test_skill_test_runs_as_an_ordinary_skill(project):
    project.write("add.skill.py", ADD)
    cases(project, "add", "  - name: adds\n    args: {a: 2, b: 3}\n    expect: {result: {sum: 5}}\n")
    done = project.cli("run", "skill-test", "--targets", "add", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(c["skill"], c["case"], c["status"]) for c in report["cases"]] == [("add", "adds", "passed")]


def test_with_no_target_every_tests_file_of_the_project_runs(project):
    project.write("math/add.skill.py", ADD)
    cases(project, "math/add", "  - name: adds\n    args: {a: 1, b: 1}\n    expect: {result: {sum: 2}}\n")
    project.write(".agent-apps/skills/greet.skill.md", GREET)
    project.write(".agent-apps/skills/greet.turns.json", GREET_TURNS)
    project.write(".agent-apps/skills/greet.tests.yaml",
                  "cases:\n  - name: greets\n    args: {who: Al}\n    script: greet.turns.json\n"
                  "    expect: {result: 'Hello, Al!'}\n")
    project.write(".hidden/x.tests.yaml", "not: read")  # other dot-folders are skipped
    _, report = run_json(project)
    assert sorted(c["file"] for c in report["cases"]) == [".agent-apps/skills/greet.tests.yaml", "math/add.tests.yaml"]
    assert report["summary"]["ok"] is True, report


LIVE_GREET = GREET.replace("metadata:\n", "metadata:\n  model: {agent: agent-scripted, script: live.turns.json}\n")


def test_record_refuses_a_skill_with_no_model_and_writes_nothing(project):
    project.write("greet.skill.md", GREET)
    cases(project, "greet", "  - name: greets\n    args: {who: Ada}\n")
    done = project.cli("test", "--record")
    assert done.returncode == 2
    assert "--record needs a model to record from, and skill 'greet'" in done.stderr
    assert not (project.root / "greet.greets.turns.json").exists()


def test_record_writes_the_turns_and_the_prompt_hash_and_check_reports_them_stale(project):
    from agentapps.tools.loader import load_file
    from agentapps.tools.testfile import prompt_hash

    skill = project.write("greet.skill.md", LIVE_GREET)
    project.write("live.turns.json", GREET_TURNS)  # the "live" model here: the scripted provider
    cases(project, "greet", "  - name: greets\n    args: {who: Ada}\n    expect: {result: 'Hello, Ada!'}\n")
    done = project.cli("test", "--record")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[recorded greet.greets.turns.json]" in done.stdout
    recorded = json.loads((project.root / "greet.greets.turns.json").read_text())
    assert recorded["turns"] == json.loads(GREET_TURNS)["turns"]
    assert recorded["recorded"]["promptHash"] == prompt_hash(load_file(skill))
    assert "stale-tests" not in project.cli("check", "--json").stdout

    (project.root / "live.turns.json").unlink()  # from now on only the recording can answer
    assert project.cli("test").returncode == 0
    skill.write_text(LIVE_GREET.lstrip("\n").replace("warmly", "briefly"))
    checked = project.cli("check", "--json")
    [finding] = [f for f in json.loads(checked.stdout)["findings"] if f["code"] == "stale-tests"]
    assert (finding["path"], finding["line"], finding["severity"]) == ("greet.skill.md", 8, "warning")
    assert "Skill 'greet' prompt changed since greet.greets.turns.json was recorded for its test 'greets'" \
        in finding["message"]
    assert project.cli("check", "--strict").returncode == 2


def test_record_writes_a_shared_script_once_and_the_other_cases_replay_it(project):
    project.write("greet.skill.md", LIVE_GREET)
    project.write("live.turns.json", GREET_TURNS)
    cases(project, "greet", "".join(f"  - name: {name}\n    args: {{who: Ada}}\n    script: shared.turns.json\n"
                                    "    expect: {result: 'Hello, Ada!'}\n" for name in ("one", "two", "three")))
    done = project.cli("test", "--record", "-j", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("[recorded shared.turns.json]") == 1
    assert "PASS greet: one" in done.stdout and "[recorded" in done.stdout.splitlines()[0]


def test_a_script_written_by_hand_is_never_called_stale(project):
    project.write("greet.skill.md", GREET)
    project.write("greet.turns.json", GREET_TURNS)
    cases(project, "greet", "  - name: greets\n    args: {who: Ada}\n    script: greet.turns.json\n")
    checked = json.loads(project.cli("check", "--json").stdout)
    assert checked["summary"]["warnings"] == 0, checked


def test_skill_test_is_hidden_from_listings_and_agents_but_shadowable(project):
    listed = json.loads(project.cli("list", "--json").stdout)["skills"]
    assert "skill-test" not in {s["name"] for s in listed}
    everything = json.loads(project.cli("list", "--all", "--json").stdout)["skills"]
    assert "skill-test" in {s["name"] for s in everything}
    project.write(".agent-apps/skills/skill-test.skill.py", '''
frontmatter = {"name": "skill-test", "metadata": {"params": {"type": "object"}}}


def run(ctx, args):
    case = {"skill": "mine", "case": "by the shadow", "file": "x", "line": 1, "status": "passed",
            "duration_ms": 0.0}
    return {"cases": [case], "summary": {"cases": 1, "passed": 1, "failed": 0, "ok": True, "skills": 1}}
''')
    done = project.cli("test")
    assert (done.returncode, done.stdout.splitlines()[0]) == (0, "PASS mine: by the shadow (0.0 s)")


def test_a_shadow_that_returns_no_report_is_a_clear_failure(project):
    project.write(".agent-apps/skills/skill-test.skill.py",
                  'frontmatter = {"name": "skill-test", "metadata": {"params": {"type": "object"}}}\n\n\n'
                  'def run(ctx, args):\n    return "all good"\n')
    done = project.cli("test")
    assert done.returncode == 1 and "skill-test returned a report 'agentapps test' cannot read" in done.stderr


def test_the_examples_tests_pass(tmp_path, project):
    """What .ci/run runs, on a copy (the chat example's session store writes into its folder)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("sessions", "runs", "state"))
    done = project.cli("test", "-q", "--junit", str(tmp_path / "junit.xml"), "examples", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith(" failed\n") and ", 0 failed" in done.stdout
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert int(root.get("tests") or 0) >= 10 and root.get("failures") == "0"


def test_a_case_name_with_control_characters_is_printed_escaped(project):
    # a tests file that came with a skill must not ring the bell or move the cursor of the terminal
    project.write("add.skill.py", ADD)
    cases(project, "add", """
  - name: "adds \\x1b[2J and \\u0007"
    args: {a: 1, b: 2}
    expect: {result: {sum: 3}}
""")
    done = project.cli("test")
    assert done.returncode == 0, done.stderr
    assert "PASS add: adds \\x1b[2J and \\x07 (" in done.stdout and "\x1b" not in done.stdout


@pytest.mark.parametrize("key, value", [
    ("stdin", "../outside.txt"), ("stdin", "/etc/hostname"), ("script", "../outside.turns.json"),
    ("script", "/etc/hostname"),
])
def test_stdin_and_script_stay_in_the_tests_files_folder(project, key, value):
    # a tests file that came with a skill (an installed package) must not feed files from elsewhere
    # on the machine to a skill's args or to the model script player
    project.write("skills/add.skill.py", ADD)
    project.write("outside.txt", "a secret\n")
    project.write("outside.turns.json", '{"turns": []}')
    project.write("skills/add.tests.yaml", f"cases:\n  - name: reads\n    {key}: {value}\n")
    done = project.cli("test")
    assert done.returncode == 2 and done.stdout == ""
    assert f"skills/add.tests.yaml:3: Case 'reads': `{key}` must" in done.stderr and "folder or below it" in done.stderr


def test_a_tests_file_with_no_cases_is_bad_input(project):
    project.write("add.skill.py", ADD)
    project.write("add.tests.yaml", "cases: []\n")
    done = project.cli("test", "add")
    assert done.returncode == 2 and "add.tests.yaml:1: The tests file has no cases" in done.stderr


def test_a_recorded_block_without_a_hash_is_reported_not_taken_for_a_hand_written_script(project):
    # `recorded: {promptHash: 5}` used to switch stale detection off without a word
    project.write("greet.skill.md", LIVE_GREET)
    script = json.loads(GREET_TURNS)
    project.write("greet.greets.turns.json", json.dumps({**script, "recorded": {"promptHash": 5}}))
    cases(project, "greet", "  - name: greets\n    args: {who: Ada}\n    expect: {result: 'Hello, Ada!'}\n")
    findings = json.loads(project.cli("check", "--json").stdout)["findings"]
    assert [f["path"] for f in findings if f["code"] == "stale-tests"] == ["greet.skill.md"]
