"""A run refused for a frontmatter setting says the file, the line and the setting, like `check` does."""

from __future__ import annotations

import json

import pytest

MD = "---\nname: t\ndescription: Test.\nmetadata:\n{meta}---\nHello.\n"
MAIN = "---\nname: proj\ndescription: Main.\nmetadata:\n  role: main\n{meta}---\nMain.\n"


def md(meta: str) -> str:
    return MD.format(meta=meta)


# (metadata lines of t.skill.md, the line the error names, the message it carries)
REFUSED = [
    pytest.param("  model: {maxTurns: -1}\n", 5, "Skill 't' model.maxTurns must be a number >= 1, not -1.",
                 id="maxTurns"),
    pytest.param("  model:\n    id: m\n    maxTokens: 0\n", 7, "model.maxTokens must be a number >= 1, not 0",
                 id="maxTokens-nested-key-line"),
    pytest.param("  model:\n    agent: agent-xyzzy\n", 6,
                 "Skill 't' model.agent names 'agent-xyzzy', which is not a skill on the search path. "
                 "Providers: agent-anthropic, agent-bedrock, agent-openai, agent-scripted.", id="unknown-provider"),
    pytest.param("  model:\n    provider: gemini\n", 6,
                 "Skill 't' model.provider names 'gemini', which is not a skill on the search path. "
                 "Providers: bedrock, openai, anthropic, scripted, or a provider skill (agent-anthropic, "
                 "agent-bedrock, agent-openai, agent-scripted).", id="unknown-provider-short-name"),
    pytest.param("  model:\n    guard: no-such-guard\n", 6,
                 "model.guard names 'no-such-guard', which is not a skill on the search path", id="unknown-guard"),
    pytest.param("  model:\n    temperature: 3\n", 6, "model.temperature must be a number from 0 to 1, not 3",
                 id="temperature"),
    pytest.param("  model:\n    maxOutputTokens: lots\n", 6, "model.maxOutputTokens must be a whole number >= 1",
                 id="maxOutputTokens"),
    pytest.param("  model:\n    contextEdit: {clearAt: 2}\n", 6, "model.contextEdit.clearAt must be a fraction",
                 id="contextEdit"),
    pytest.param("  model:\n    maxCost: 1\n    id: my-own-model\n", 6,
                 "Model 'my-own-model' has no known price, so the cost budget of 't' cannot be kept",
                 id="cost-budget-without-price"),
    pytest.param("  session:\n    key: args.x\n    store: fiel\n", 7,
                 "Skill 't' has an invalid `session` setting: `store` must be memory, file or redis.",
                 id="session-store"),
    pytest.param("  session: {store: fiel}\n", 5, "`key` must be a path into the context", id="session-no-key"),
]


@pytest.mark.parametrize(("meta", "line", "message"), REFUSED)
def test_a_refused_setting_names_its_file_line_and_key(project, meta, line, message):
    path = project.write("t.skill.md", md(meta))
    result = project.cli("run", "t")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {path}:{line}: ")
    assert message in result.stderr


def test_a_setting_cascaded_from_the_main_skill_names_the_main_skill_file(project):
    main = project.write("proj.skill.md", MAIN.format(meta="  model:\n    maxTurns: 0\n"))
    project.write("t.skill.md", md("  tags: [x]\n"))
    result = project.cli("run", "t")
    assert result.returncode == 2
    assert f"error: {main}:7: Skill 't' model.maxTurns must be a number >= 1, not 0." in result.stderr


def test_an_overridden_setting_is_not_blamed_on_the_file(project):
    """--local sets model.maxTurns in the main skill's metadata, not in its file: no file:line."""
    project.write("proj.skill.md", MAIN.format(meta=""))
    project.write("t.skill.md", md("  tags: [x]\n"))
    result = project.cli("run", "--local-json", "model.maxTurns=0", "t")
    assert result.returncode == 2
    assert result.stderr == "error: Skill 't' model.maxTurns must be a number >= 1, not 0.\n"


def test_json_error_carries_the_file_and_line(project):
    path = project.write("t.skill.md", md("  model: {maxTurns: -1}\n"))
    result = project.cli("run", "--json", "t")
    error = json.loads(result.stdout)["error"]
    assert (error["type"], error["file"], error["line"]) == ("ConfigError", str(path), 5)


PATTERN_SKILL = '''frontmatter = {
    "name": "pat",
    "metadata": {"params": {"type": "object",
                            "properties": {"s": {"type": "string", "pattern": "a(?=b)"}}}},
}


def run(ctx, args):
    return args
'''


def test_an_unusable_pattern_fails_the_run_at_the_line_check_names(project):
    path = project.write("pat.skill.py", PATTERN_SKILL)
    checked = project.cli("check", "pat.skill.py")
    assert checked.stdout.startswith("pat.skill.py:4: error: Skill 'pat' params schema has a 'pattern'")
    result = project.cli("run", "pat", "--s", "ab")
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {path}:4: Skill 'pat' params schema has a 'pattern' that cannot")


def test_json_args_error_carries_the_skill_file(project):
    path = project.write("num.skill.py", 'frontmatter = {"name": "num", "metadata": {"params": {"type": "object", '
                                         '"properties": {"n": {"type": "integer"}}, "required": ["n"]}}}\n\n\n'
                                         "def run(ctx, args):\n    return args\n")
    result = project.cli("run", "--json", "num", "--arg-json", '{"n": "x"}')
    error = json.loads(result.stdout)["error"]
    assert (error["type"], error["file"], error["line"]) == ("ArgsError", str(path), None)
    assert result.returncode == 2


def test_a_refused_stores_setting_names_the_main_skill_line(project):
    main = project.write("proj.skill.md", MAIN.format(meta="  stores:\n    state: redsi\n"))
    result = project.cli("run", "state-get", "--key", "x")
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {main}:7: Main skill 'proj' has an invalid `stores` setting: `state`")


def test_a_refused_paths_entry_names_its_line_for_run_and_check(project):
    main = project.write("proj.skill.md", MAIN.format(meta="  paths:\n    - tools\n    - 5\n"))
    for command in (("run", "proj"), ("check",)):
        result = project.cli(*command)
        assert result.returncode == 2
        assert result.stderr.startswith(f"error: {main}:8: Main skill 'proj' has a `paths` entry 5")


# (metadata lines of t.skill.md, the line named, what the line says to write instead)
ANNOTATIONS = [
    pytest.param("  $remove: [model]\n", 5, "`$remove` is not implemented by agentapps: to keep an ancestor's key",
                 id="remove"),
    pytest.param("  $dynamic: [audit]\n", 5, "`role: middleware` with `applies-to`/`applies-if`", id="dynamic"),
    pytest.param("  $static: [trust]\n", 5, "`$inherit: false` leaves a skill out", id="static"),
    pytest.param("  $self: {model: {id: m}}\n", 5, "`--local model.KEY=VALUE` overrides it", id="self"),
    pytest.param("  params:\n    type: object\n    properties:\n      x: {$resolve: other}\n", 8,
                 "`$resolve` is not implemented by agentapps: share a schema by `$inherit`", id="resolve"),
    pytest.param("  $inherits: base\n", 5, "`$inherits` is not a metadata annotation (agentapps knows $inherit, "
                 "$private, $merge, $order, $locked)", id="misspelt"),
]


@pytest.mark.parametrize(("meta", "line", "says"), ANNOTATIONS)
def test_an_annotation_agentapps_does_not_implement_is_refused_by_run_and_check(project, meta, line, says):
    """They used to be ignored: the skill ran (exit 0) as if its author had not written them."""
    path = project.write("t.skill.md", md(meta))
    ran = project.cli("run", "t")
    assert ran.returncode == 2 and ran.stderr.startswith(f"error: {path}:{line}: Skill 't': "), ran.stderr
    assert says in ran.stderr and len(ran.stderr.splitlines()) == 1
    checked = project.cli("check")
    assert checked.returncode == 2 and f"t.skill.md:{line}: error: Skill 't': " in checked.stdout + checked.stderr
    assert "unsupported-annotation" in project.cli("check", "--json").stdout


def test_an_annotation_in_an_inherited_skill_is_refused_for_its_children_too(project):
    base = project.write("base.skill.md", "---\nname: base\ndescription: Base.\nmetadata:\n  $remove: [x]\n"
                                          "---\nBase.\n")
    project.write("t.skill.md", md("  $inherit: base\n"))
    ran = project.cli("run", "t")
    assert ran.returncode == 2 and ran.stderr.startswith(f"error: {base}:5: Skill 'base': `$remove`"), ran.stderr
