"""Mistakes that used to pass with exit 0: each now gets one line and exit 2, or does what was meant.

An override path with a typo, piped stdin a skill has no use for, JSON text given to an untyped param,
and the seed's spellings (`AGENT_APPS_LOCAL_*`, `--config`, `--global`).
"""

from __future__ import annotations

import json

import pytest

from agentapps.cascade.local import Override, apply
from agentapps.errors import UsageError
from agentapps.types import ToolDef

MAIN = """
---
name: app
metadata:
  role: main
  model: {id: base-model, region: us-east-1}
  mySettings: {level: 1}
---
The app.
"""
SHOW = '''
frontmatter = {"name": "show", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    return {"model": ctx.meta.get("model"), "api": ctx.meta.get("api"), "mine": ctx.meta.get("mySettings")}
'''
ECHO_ARGS = '''
frontmatter = {"name": "echo-args", "metadata": {"params": {"type": "object", "properties": {
    "data": {}, "text": {"type": "string"}, "choice": {"enum": ["[a]", "b"]}, "input": {"type": "string"}}}}}

def run(ctx, args):
    return args
'''
NAMED = '''
frontmatter = {"name": "named", "metadata": {"params": {"type": "object", "properties": {
    "path": {"type": "string"}, "max-lines": {"type": "integer"}}}}}

def run(ctx, args):
    return args
'''


@pytest.fixture
def app(project):
    project.write("app.skill.md", MAIN)
    project.write("show.skill.py", SHOW)
    return project


def _refused(result, *needles: str) -> str:
    """The one stderr line of a run refused as bad input (exit 2, nothing on stdout)."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- override paths ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "env", "named"), [
    (["--local", "modle.id=x"], {}, "--local modle.id"),
    (["--local-json", 'modle={"id": "x"}'], {}, "--local-json modle"),
    ([], {"AGENTAPPS_LOCAL_MODLE__ID": "x"}, "AGENTAPPS_LOCAL_MODLE__ID"),
    ([], {"AGENT_APPS_LOCAL_MODLE__ID": "x"}, "AGENT_APPS_LOCAL_MODLE__ID"),
    (["--local", "mySetings.level=2"], {}, "--local mySetings.level"),  # a key the main file has
])
def test_a_typo_in_an_override_path_is_refused_with_a_did_you_mean(app, argv, env, named):
    line = _refused(app.cli("run", *argv, "show", **env), named, "did you mean")
    assert "'model'" in line or "'mySettings'" in line


def test_a_projects_own_new_key_is_set_while_its_typo_twin_is_refused(app):
    result = app.cli("run", "--local", "api.url=https://x", "--local", "model.region=eu-west-1",
                     "--local", "mySettings.level=3", "show")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["api"] == {"url": "https://x"} and shown["model"]["region"] == "eu-west-1"
    assert shown["mine"] == {"level": 3}
    _refused(app.cli("run", "--local", "api.url=https://x", "--local", "mdoel.region=x", "show"), "'model'")


def test_below_the_first_segment_paths_stay_free_form():
    main = ToolDef("app", "markdown", {"name": "app", "metadata": {"role": "main"}})
    patched, _ = apply(main, [Override("--local", "model.providerOptions.x", "1", True)])
    assert patched is not None and patched.metadata["model"] == {"providerOptions": {"x": 1}}
    with pytest.raises(UsageError, match="did you mean 'session'"):
        apply(main, [Override("--local", "sesion.key", "args.id", True)])


def test_the_seeds_environment_spelling_is_read_beside_ours_and_ours_wins(app):
    seed = app.cli("run", "show", AGENT_APPS_LOCAL_MODEL__REGION="from-seed-spelling")
    assert seed.returncode == 0, seed.stderr
    assert json.loads(seed.stdout)["model"]["region"] == "from-seed-spelling"
    both = app.cli("run", "show", AGENT_APPS_LOCAL_MODEL__REGION="seed", AGENTAPPS_LOCAL_MODEL__REGION="ours")
    assert json.loads(both.stdout)["model"]["region"] == "ours"


@pytest.mark.parametrize(("flag", "pointer"), [
    (["--config", "agentapps.yaml"], "--local KEY.PATH=VALUE"),
    (["--config=agentapps.yaml"], "--local KEY.PATH=VALUE"),
    (["--global"], "~/.agent-apps/skills"),
])
def test_the_seeds_config_and_global_flags_are_refused_with_a_pointer(app, flag, pointer):
    _refused(app.cli("run", *flag, "show"), f"agentapps run has no {flag[0].split('=')[0]}", pointer)


# -- piped stdin ------------------------------------------------------------------------------------

def test_stdin_piped_to_a_code_skill_without_an_input_param_is_refused_naming_its_params(project):
    project.write("named.skill.py", NAMED)
    line = _refused(project.cli("run", "named", "--path", "a.txt", input="piped text\n"), "'named'")
    assert "--path, --max-lines" in line and "stdin" in line
    empty = project.cli("run", "named", "--path", "p", input="")  # an empty pipe is no mistake
    assert empty.returncode == 0 and json.loads(empty.stdout) == {"path": "p"}


def test_stdin_piped_to_a_markdown_skill_with_params_but_no_input_is_refused(project):
    """Folder skills and markdown skills without params are left alone: their piped stdin is the
    task (another change gives it to the model)."""
    project.write("ask.skill.md", "---\nname: ask\nmetadata:\n  params: {type: object, properties: "
                                  "{topic: {type: string}}}\n---\nTell me about :arg[topic].\n")
    project.write("plain.skill.md", "---\nname: plain\n---\nSay hi.\n")
    project.write("tidy/SKILL.md", "---\nname: tidy\ndescription: Tidy.\nmetadata:\n  params: {type: object, "
                                   "properties: {topic: {type: string}}}\n---\nTidy up.\n")
    _refused(project.cli("run", "--dry-run", "ask", "--topic", "x", input="piped\n"), "'ask'", "--topic")
    for name in ("plain", "tidy"):
        result = project.cli("run", "--dry-run", name, input="some task\n")
        assert result.returncode == 0, result.stderr


def test_stdin_and_input_flag_together_are_refused_rather_than_one_dropped(project):
    project.write("echo-args.skill.py", ECHO_ARGS)
    _refused(project.cli("run", "echo-args", "--input", "flag", input="piped\n"), "--input", "stdin")
    filled = project.cli("run", "echo-args", input="piped\n")  # stdin alone still fills `input`
    assert filled.returncode == 0 and json.loads(filled.stdout) == {"input": "piped\n"}
    project.write("named.skill.py", NAMED)  # and `--args-file -` still reads it
    from_file = project.cli("run", "--args-file", "-", "named", input='{"path": "p"}')
    assert from_file.returncode == 0 and json.loads(from_file.stdout) == {"path": "p"}


# -- untyped params ---------------------------------------------------------------------------------

def test_json_text_on_an_untyped_param_is_read_as_an_object_or_array(project):
    project.write("echo-args.skill.py", ECHO_ARGS)
    cases = [
        (["--data", '{"a": 1}'], {"data": {"a": 1}}),  # an object, as --arg-json would give it
        (["--data", "[1, 2]"], {"data": [1, 2]}),
        (["--data", "[1, 2"], {"data": "[1, 2"}),  # not JSON: the text as given
        (["--data", "5"], {"data": "5"}),  # only objects and arrays are read as JSON
        (["--text", '{"a": 1}'], {"text": '{"a": 1}'}),  # a string param keeps its text
        (["--choice", "[a]"], {"choice": "[a]"}),  # an enum says what it is: text
    ]
    for argv, expected in cases:
        result = project.cli("run", "echo-args", *argv)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == expected, argv
