"""`agentapps run` end to end through the CLI's entry point: exit codes, stdout/stderr, coercion, stdin, --json, help."""

from __future__ import annotations

import json
import os
import stat

import pytest

TYPED = '''
frontmatter = {
    "name": "typed",
    "description": "Echo typed params.",
    "metadata": {"params": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "A name."},
            "times": {"type": "integer", "minimum": 1},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": "array", "items": {"type": "integer"}},
            "opts": {"type": "object"},
            "sessionId": {"type": "string"},
            "input": {"type": "string"},
        },
        "required": ["name"],
        "additionalProperties": False,
    }},
}

def run(ctx, args):
    return args
'''


@pytest.fixture
def typed(project):
    project.write("typed.skill.py", TYPED)
    return project


def run_json(project, *argv, **kw):
    result = project.cli("run", *argv, **kw)
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


def test_hello_prints_only_the_result_on_stdout(project):
    result = project.cli("run", "hello", "--name", "Ada")
    assert (result.returncode, result.stdout, result.stderr) == (0, "Hello, Ada!\n", "")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--name", "A"], {"name": "A"}),
        (["--name=A", "--times", "3"], {"name": "A", "times": 3}),
        (["--name", "A", "--ratio", "0.5"], {"name": "A", "ratio": 0.5}),
        (["--name", "A", "--loud"], {"name": "A", "loud": True}),
        (["--name", "A", "--no-loud"], {"name": "A", "loud": False}),
        (["--name", "A", "--loud=false"], {"name": "A", "loud": False}),
        (["--name", "A", "--tags", "x", "--tags", "y"], {"name": "A", "tags": ["x", "y"]}),
        (["--name", "A", "--tags", '["x","y"]'], {"name": "A", "tags": ["x", "y"]}),
        (["--name", "A", "--counts", "1", "--counts", "2"], {"name": "A", "counts": [1, 2]}),
        (["--name", "A", "--opts", '{"k": 1}'], {"name": "A", "opts": {"k": 1}}),
        (["--name", "A", "--session-id", "s1"], {"name": "A", "sessionId": "s1"}),
        (["--arg", "name=B", "--arg-json", '{"times": 2}'], {"name": "B", "times": 2}),
        (["--name", "-5"], {"name": "-5"}),
    ],
)
def test_params_are_coerced_by_the_schema(typed, argv, expected):
    result, out = run_json(typed, "typed", *argv)
    assert result.returncode == 0, result.stderr
    assert out == expected


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["typed"], 2, "'name' is required"),
        (["typed", "--name", "A", "--times", "zero"], 2, "--times for skill 'typed' expects integer"),
        (["typed", "--name", "A", "--times", "0"], 2, "times"),
        (["typed", "--name", "A", "--nmae", "x"], 2, "Did you mean --name?"),
        (["typed", "--name"], 2, "--name needs a value"),
        (["typed", "--name", "A", "stray"], 2, "Unexpected argument 'stray'"),
        (["typed", "--name", "A", "--opts", "{bad"], 2, "--opts for skill 'typed' expects object"),
        (["nosuch"], 2, "Unknown skill 'nosuch'"),
        (["--bogus", "typed"], 2, "Unknown runner option '--bogus'"),
        (["hello", "--name", "A", "--x", "1"], 2, "has no param --x"),
        (["./missing.skill.md"], 2, "No skill file at"),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_exit_2(typed, argv, code, message):
    result = typed.cli("run", *argv)
    assert result.returncode == code
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert message in lines[0]
    assert "Traceback" not in result.stderr


def test_failing_skill_exits_1_and_verbose_shows_the_traceback(project):
    project.write("fail.skill.py", 'frontmatter = {"name": "fail"}\n\ndef run(ctx, args):\n    raise ValueError("nope")\n')
    quiet = project.cli("run", "fail")
    assert quiet.returncode == 1
    assert quiet.stderr.strip().endswith("Skill 'fail' failed: ValueError: nope")
    assert "fail.skill.py:4" in quiet.stderr
    assert "Traceback" not in quiet.stderr
    loud = project.cli("run", "-v", "fail")
    assert loud.returncode == 1 and "Traceback" in loud.stderr


def test_json_output_for_success_and_failure(typed):
    ok, out = run_json(typed, "--json", "typed", "--name", "A")
    assert ok.returncode == 0
    assert out["ok"] is True and out["skill"] == "typed" and out["result"] == {"name": "A"}
    assert out["error"] is None and isinstance(out["duration_ms"], float)
    bad, out = run_json(typed, "--json", "typed")
    assert bad.returncode == 2
    assert out["ok"] is False and out["error"]["exit_code"] == 2 and "required" in out["error"]["message"]


def test_args_file_from_stdin_and_from_a_file(typed):
    _, out = run_json(typed, "--args-file", "-", "typed", input='{"name": "Ada", "times": 2}')
    assert out == {"name": "Ada", "times": 2}
    (typed.root / "a.json").write_text('{"name": "F"}')
    _, out = run_json(typed, "--args-file", "a.json", "typed", "--times", "4")
    assert out == {"name": "F", "times": 4}
    bad = typed.cli("run", "--args-file", "-", "typed", input="[1]")
    assert bad.returncode == 2 and "must hold a JSON object" in bad.stderr


def test_piped_stdin_fills_the_input_param(typed):
    _, out = run_json(typed, "typed", "--name", "A", input="diff text\n")
    assert out == {"name": "A", "input": "diff text\n"}


def test_stdin_is_refused_by_code_skills_without_an_input_param(project):
    result = project.cli("run", "hello", input="would be dropped")
    assert result.returncode == 2 and result.stdout == ""  # never dropped quietly (silent_mistakes)
    assert project.cli("run", "hello", input="").stdout == "Hello, world!\n"


def test_non_string_results_print_as_json(project):
    project.write("n.skill.py", 'frontmatter = {"name": "n"}\n\ndef run(ctx, args):\n    return {"n": [1, 2]}\n')
    assert json.loads(project.cli("run", "n").stdout) == {"n": [1, 2]}


def test_skill_help_is_generated_from_params(typed):
    result = typed.cli("run", "typed", "--help")
    assert result.returncode == 0
    assert "Usage: agentapps run typed" in result.stdout
    assert "--name STRING" in result.stdout and "[required]" in result.stdout
    assert "--loud / --no-loud" in result.stdout and "--session-id STRING" in result.stdout


def test_run_help_and_top_level_help(project):
    assert "Runner options go before SKILL" in project.cli("run", "--help").stdout
    top = project.cli("--help")
    assert top.returncode == 0 and "describe" in top.stdout and "which" in top.stdout


def test_shebang_skill_runs_when_executed_directly(project, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    import sys

    shim = bindir / "agentapps"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m agentapps \"$@\"\n")
    shim.chmod(0o755)
    script = project.write("tool.skill.py", '#!/usr/bin/env -S agentapps run\nfrontmatter = {"name": "tool"}\n\n'
                           'def run(ctx, args):\n    return "ran directly"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    import subprocess

    env = project.env(PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run([str(script)], check=False, cwd=project.root, env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout == "ran directly\n", result.stderr


def test_dry_run_validates_and_shows_the_chain_without_running(project):
    marker = project.root / "ran"
    project.write("side.skill.py", f'frontmatter = {{"name": "side", "metadata": {{"params": {{"type": "object"}}}}}}\n\n'
                  f'def run(ctx, args):\n    open({str(marker)!r}, "w")\n')
    result = project.cli("run", "--dry-run", "side", "--x", "1")
    out = json.loads(result.stdout)
    assert out["dryRun"] is True and out["args"] == {"x": "1"} and "execute" in out["chain"]
    assert not marker.exists()


def test_list_describe_which_and_init(project):
    init = project.cli("init")
    assert init.returncode == 0 and "created" in init.stdout
    again = project.cli("init")
    assert "kept" in again.stdout and "created" not in again.stdout
    assert project.cli("run", "greet", "--name", "Ada", "--times", "2").stdout == "Hello, Ada!\nHello, Ada!\n"
    assert project.cli("run", "./skills/greet.skill.py", "--name", "Ada").stdout == "Hello, Ada!\n"
    listed = json.loads(project.cli("list", "--json").stdout)["skills"]
    names = {s["name"] for s in listed}
    assert {"greet", "hello", "skill-list"} <= names and "default" not in names
    assert [s["name"] for s in json.loads(project.cli("list", "--json", "--query", "greet").stdout)["skills"]] == ["greet"]
    assert {s["name"] for s in json.loads(project.cli("list", "--json", "--tag", "discovery").stdout)["skills"]} == {
        "skill-list", "skill-describe"}
    described = json.loads(project.cli("describe", "greet", "--json").stdout)
    assert described["params"]["required"] == ["name"] and described["chain"][-1] == "execute"
    assert project.cli("which", "greet").stdout.startswith(str(project.root / "skills" / "greet.skill.py"))
    missing = project.cli("which", "gret")
    assert missing.returncode == 2 and "Did you mean 'greet'" in missing.stderr
    nothing_close = project.cli("which", "zzzz-nothing")
    assert nothing_close.stderr == "error: Unknown skill 'zzzz-nothing'. Run 'agentapps list' to see what is available.\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["list", "--bogus"], "No such option: --bogus (see 'agentapps list --help')"),
        (["describe"], "Missing argument 'ref'"),
        (["nosuchcmd"], "No such command 'nosuchcmd'. (see 'agentapps --help')"),
        (["rn"], "No such command 'rn'. Did you mean 'run' or 'runs'? (see 'agentapps --help')"),
        (["describe", "./missing.skill.md"], "No skill file at"),
        (["sessions", "show", "nope"], "No session 'nope'"),
    ],
)
def test_other_commands_report_bad_input_in_one_line(project, argv, message):
    result = project.cli(*argv)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


@pytest.mark.parametrize("argv", [("check", "-h"), ("runs", "list", "-h"), ("list", "-h")])
def test_dash_h_is_help_for_every_command(project, argv):
    result = project.cli(*argv)
    assert result.returncode == 0 and result.stdout.startswith(f"Usage: agentapps {' '.join(argv[:-1])}")


def test_a_tilde_ref_is_a_literal_path_not_a_crash(project):
    result = project.cli("run", "~0")
    assert result.returncode == 2 and "No skill named '~0'" in result.stderr and "internal error" not in result.stderr


@pytest.mark.parametrize("option", ["--dry-run", "--json", "--timeout", "--record", "-v", "-q"])
def test_runner_options_after_the_skill_name_are_refused_not_passed_as_args(project, option):
    project.write("open.skill.py", 'frontmatter = {"name": "open", "metadata": {"params": {"type": "object"}}}\n\n'
                  "def run(ctx, args):\n    return args\n")
    result = project.cli("run", "open", option, "5")
    assert result.returncode == 2 and result.stdout == ""
    assert f"{option} is an option of 'agentapps run': put it before the skill name" in result.stderr


def test_a_param_named_like_a_runner_option_is_still_a_param(project):
    project.write("m.skill.py", 'frontmatter = {"name": "m", "metadata": {"params": {"type": "object", '
                  '"properties": {"model": {"type": "string"}}}}}\n\ndef run(ctx, args):\n    return args["model"]\n')
    assert project.cli("run", "m", "--model", "x").stdout == "x\n"


def test_piped_input_may_be_larger_than_the_nested_string_limit(typed):
    big = "x" * 100_000
    result, out = run_json(typed, "typed", "--name", "A", input=big)
    assert result.returncode == 0, result.stderr
    assert len(out["input"]) == 100_000
    typed.write("nested.skill.py", '''
        frontmatter = {"name": "nested"}

        async def run(ctx, args):
            return await ctx.manager.invoke("typed", {"name": "A", "input": "y" * 100_000})
        ''')
    nested = typed.cli("run", "nested")
    assert nested.returncode == 2 and "the limit is 64000" in nested.stderr
    assert "typed.skill.py" in nested.stderr  # the file of the skill the args were for


def test_untagged_skills_have_no_tags(project):
    project.write("plain.skill.py", 'frontmatter = {"name": "plain"}\n\ndef run(ctx, args):\n    return 1\n')
    assert json.loads(project.cli("describe", "plain", "--json").stdout)["tags"] == []


@pytest.mark.parametrize("value", ["inf", "nan", "99999999999"])
def test_timeout_refuses_values_that_are_not_a_sane_number_of_seconds(project, value):
    result = project.cli("run", "--timeout", value, "hello")
    assert result.returncode == 2 and "--timeout must be" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("argv", [["--ratio", "nan"], ["--ratio", "inf"], ["--arg-json", '{"ratio": NaN}']])
def test_nan_and_infinity_are_not_numbers(typed, argv):
    result = typed.cli("run", "typed", "--name", "A", *argv)
    assert result.returncode == 2 and "NaN" not in result.stdout and "Infinity" not in result.stdout


def test_version_and_bare_help(project):
    version = project.cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("agentapps ")
    bare = project.cli()
    assert bare.returncode == 0 and bare.stdout.count("Usage: agentapps") == 1
    missing = project.cli("sessions", "clear")
    assert missing.returncode == 2 and "(see 'agentapps sessions clear --help')" in missing.stderr


def test_configuration_errors_name_the_skill_file(project):
    project.write("cyc.skill.py", 'frontmatter = {"name": "cyc", "metadata": {"$inherit": "cyc2"}}\n\ndef run(ctx, args):\n    return 1\n')
    project.write("cyc2.skill.py", 'frontmatter = {"name": "cyc2", "metadata": {"$inherit": "cyc"}}\n\ndef run(ctx, args):\n    return 1\n')
    project.write("badat.skill.py", 'frontmatter = {"name": "badat", "allowed-tools": "file-{read"}\n\ndef run(ctx, args):\n    return 1\n')
    cycle = project.cli("run", "cyc")
    assert cycle.returncode == 2 and "cyc.skill.py: $inherit cycle" in cycle.stderr
    pattern = project.cli("run", "badat")
    assert pattern.returncode == 2 and "badat.skill.py: Skill 'badat' allowed-tools: Malformed pattern" in pattern.stderr


def test_an_unknown_schema_type_is_reported_as_a_schema_problem(project):
    project.write("badtype.skill.md", "---\nname: badtype\nmetadata:\n  params: {type: object, properties: {path: {type: strin}}}\n---\nx\n")
    result = project.cli("run", "badtype", "--path", "x")
    assert result.returncode == 2 and "invalid params schema" in result.stderr


def test_which_takes_paths_and_json_commands_answer_json_on_errors(project):
    project.write("tools/x.skill.py", 'frontmatter = {"name": "x"}\n\ndef run(ctx, args):\n    return 1\n')
    by_path = json.loads(project.cli("which", "./tools/x.skill.py", "--json").stdout)
    assert by_path["winner"]["name"] == "x" and by_path["shadowed"] == []
    for argv in (["which", "nosuch", "--json"], ["describe", "nosuch", "--json"]):
        result = project.cli(*argv)
        assert result.returncode == 2
        out = json.loads(result.stdout)
        assert out["ok"] is False and "Unknown skill 'nosuch'" in out["error"]["message"]


def test_a_paths_entry_inside_the_project_does_not_make_a_skill_shadow_itself(project):
    """`paths: [./extra]` adds a folder the project's own scan covers too: one file, one definition
    (which used to list the file again as shadowed by itself)."""
    project.write("proj.skill.md", "---\nname: proj\nmetadata:\n  role: main\n  paths: [./extra]\n---\nMain.\n")
    path = project.write("extra/y.skill.py", 'frontmatter = {"name": "y"}\n\ndef run(ctx, args):\n    return 1\n')
    found = json.loads(project.cli("which", "y", "--json").stdout)
    assert found["winner"]["path"] == str(path) and found["shadowed"] == []
    assert project.cli("run", "y").stdout.strip() == "1"
    assert project.cli("check").returncode == 0


def test_dry_run_json_is_an_object_for_markdown_skills_too(project):
    project.write("ask.skill.md", "---\nname: ask\nmetadata:\n  params: {type: object, properties: {q: {type: string}}}\n---\n"
                  "Answer :arg[q].\n")
    out = json.loads(project.cli("run", "--json", "--dry-run", "ask", "--q", "why").stdout)["result"]
    assert out["dryRun"] is True and out["skill"] == "ask" and "Answer why." in out["system"]
    text = project.cli("run", "--dry-run", "ask", "--q", "why").stdout
    assert "Answer why." in text and "--- user message ---" in text


def test_a_skill_failing_at_import_names_its_file_and_line(project):
    project.write("boom.skill.py", 'frontmatter = {"name": "boom"}\n\nraise RuntimeError("bad import")\n\n'
                  "def run(ctx, args):\n    return 1\n")
    result = project.cli("run", "boom")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "boom.skill.py:3: Importing skill 'boom' failed: RuntimeError: bad import")


PRINTS = '''
frontmatter = {"name": "chatty"}

def run(ctx, args):
    print("working on it")
    return {"done": True}
'''


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_what_a_skill_prints_goes_to_stderr_and_stdout_carries_only_the_result(project, json_flag):
    project.write("chatty.skill.py", PRINTS)
    result = project.cli("run", *json_flag, "chatty")
    assert result.returncode == 0
    assert "working on it" in result.stderr
    body = json.loads(result.stdout)  # one JSON document, nothing before or after it
    assert (body["result"] if json_flag else body) == {"done": True}


@pytest.mark.parametrize("body", ["    import sys\n    sys.exit(5)\n", "    raise SystemExit('bye')\n"])
def test_sys_exit_in_a_skill_fails_the_skill_not_the_process(project, body):
    project.write("quits.skill.py", 'frontmatter = {"name": "quits"}\n\ndef run(ctx, args):\n' + body)
    result = project.cli("run", "--json", "quits")
    assert result.returncode == 1
    error = json.loads(result.stdout)["error"]
    assert (error["type"], error["file"], error["line"]) == ("SkillError", str(project.root / "quits.skill.py"),
                                                            4 if "import" not in body else 5)
    assert "called sys.exit(" in error["message"]
    assert "Skill 'quits' called sys.exit(" in result.stderr
    listed = project.cli("runs", "list", "--json")
    assert [(r["skill"], r["exit_code"]) for r in json.loads(listed.stdout)["runs"]] == [("quits", 1)]


UNION = '''
frontmatter = {"name": "union", "metadata": {"params": {"type": "object", "properties": {
    "replay": {"type": ["boolean", "integer"]}, "topic": {"type": "string"}}, "additionalProperties": False}}}

def run(ctx, args):
    return args
'''


@pytest.mark.parametrize(("argv", "args"), [
    (["--replay", "10", "--topic", "t"], {"replay": 10, "topic": "t"}),
    (["--replay", "--topic", "t"], {"replay": True, "topic": "t"}),
    (["--replay"], {"replay": True}),
    (["--replay", "false"], {"replay": False}),
])
def test_a_boolean_or_integer_param_takes_a_following_number(project, argv, args):
    project.write("union.skill.py", UNION)
    result = project.cli("run", "union", *argv)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == args


def test_a_param_without_a_description_shows_its_bounds_in_help(project):
    project.write("typed.skill.py", TYPED)
    out = project.cli("run", "typed", "--help").stdout
    assert "  --times INTEGER              [>= 1]\n" in out


def test_run_command_leaves_no_stdin_gateway_behind(project, monkeypatch, capsys):
    # a program that embeds the CLI (and a later in-process persistent agent in it) must not find the
    # gateway of a finished run: that agent would read end-of-input instead of going on
    import io
    import sys

    from agentapps.cli.run import run_command
    from agentapps.gateway import GATEWAY

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    before = GATEWAY.get()
    assert run_command(["hello", "--name", "Ada"]) == 0
    assert "Hello, Ada!" in capsys.readouterr().out
    assert GATEWAY.get() is before
