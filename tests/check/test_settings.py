"""`check` refuses every `model` and `session` setting a run refuses, with the run's own message, at
the file and line that write it (the skill, its project's main skill, or an `$inherit` parent)."""

from __future__ import annotations

import pytest

from agentapps.check.run import check

MD = "---\nname: t\ndescription: Test.\nmetadata:\n{meta}---\nHello.\n"
MAIN = "---\nname: proj\ndescription: Main.\nmetadata:\n  role: main\n{meta}---\nMain.\n"


def md(meta: str, name: str = "t") -> str:
    return MD.format(meta=meta).replace("name: t\n", f"name: {name}\n", 1)


# (metadata of t.skill.md, the line of the finding, a substring of its message)
REFUSED = [
    pytest.param("  model: {maxTurns: -1}\n", 5, "model.maxTurns must be a number >= 1, not -1", id="maxTurns"),
    pytest.param("  model:\n    maxTokens: 0\n", 6, "model.maxTokens must be a number >= 1, not 0", id="maxTokens"),
    pytest.param("  model:\n    maxCost: -2\n", 6, "model.maxCost must be a number >= 0, not -2", id="maxCost"),
    pytest.param("  model:\n    deadline: soon\n", 6, "model.deadline must be a number >= 0.05", id="deadline"),
    pytest.param("  model:\n    snippetTimeout: 0\n", 6, "model.snippetTimeout must be a number >= 0.05",
                 id="snippetTimeout"),
    pytest.param("  model:\n    loopGuard: 1\n", 6, "model.loopGuard must be a number >= 2", id="loopGuard"),
    pytest.param("  model:\n    temperature: 1.5\n", 6, "model.temperature must be a number from 0 to 1",
                 id="temperature"),
    pytest.param("  model:\n    maxOutputTokens: 0\n", 6, "model.maxOutputTokens must be a whole number >= 1",
                 id="maxOutputTokens"),
    pytest.param("  model:\n    maxAttempts: 50\n", 6, "model.maxAttempts must be a whole number from 1 to 20",
                 id="maxAttempts"),
    pytest.param("  model:\n    fallback: {a: b}\n", 6, "model.fallback must be a list of model ids",
                 id="fallback"),
    pytest.param("  model:\n    cache: maybe\n", 6, "model.cache must be true, false or \"conversation\"",
                 id="cache"),
    pytest.param("  model:\n    contextWindow: 10\n", 6, "model.contextWindow must be a whole number of tokens",
                 id="contextWindow"),
    pytest.param("  model:\n    contextEdit:\n      keepTurns: -1\n", 7, "model.contextEdit.keepTurns must be",
                 id="contextEdit-field"),
    pytest.param("  model:\n    pricing:\n      my-model: {input: 1}\n    id: my-model\n", 7,
                 "model.pricing for 'my-model' needs `input` and `output`", id="pricing"),
    pytest.param("  model:\n    id: my-model\n    maxCost: 1\n", 7,
                 "Model 'my-model' has no known price, so the cost budget of 't' cannot be kept",
                 id="cost-budget-without-price"),
    pytest.param("  model:\n    agent: agent-xyzzy\n", 6,
                 "model.agent names 'agent-xyzzy', which is not a skill on the search path. Providers:",
                 id="unknown-provider"),
    pytest.param("  model:\n    guard: no-guard\n", 6, "model.guard names 'no-guard', which is not a skill",
                 id="unknown-guard"),
    pytest.param("  model:\n    contextFull: no-summarizer\n", 6,
                 "model.contextFull names 'no-summarizer', which is not a skill", id="unknown-contextFull"),
    pytest.param("  returns: {type: object}\n  model:\n    persistent: true\n", 7,
                 "sets model.persistent and `returns`", id="persistent-with-returns"),
    pytest.param("  model: fast\n", 5, "model must be a mapping of settings", id="model-not-a-mapping"),
    pytest.param("  model:\n    agent: agent-scripted\n    script: missing.turns.json\n", 7,
                 "model.script 'missing.turns.json' is not a file next to the skill", id="missing-script"),
    pytest.param("  session: {maxEntries: 3}\n", 5, "`key` must be a path into the context", id="session-no-key"),
    pytest.param("  session:\n    key: args.id\n    store: fiel\n", 7, "`store` must be memory, file or redis",
                 id="session-store"),
    pytest.param("  session:\n    key: args.id\n    maxEntrys: 5\n", 7, "unknown field 'maxEntrys'",
                 id="session-unknown-field"),
    pytest.param("  session: 42\n", 5, "use a path like args.sessionId", id="session-not-a-path"),
]


@pytest.mark.parametrize(("meta", "line", "message"), REFUSED)
def test_check_reports_the_setting_at_its_line(project, meta, line, message):
    project.write("t.skill.md", md(meta))
    found = check(project.root).findings
    assert [(f.path, f.line, f.severity, f.code) for f in found] == [("t.skill.md", line, "error", "invalid-setting")]
    assert message in found[0].message


@pytest.mark.parametrize(("meta", "line", "message"), [
    p for p in REFUSED if p.id in ("maxTurns", "unknown-provider", "model-not-a-mapping", "session-store")])
def test_check_and_run_refuse_with_the_same_message(project, meta, line, message):
    path = project.write("t.skill.md", md(meta))
    (finding,) = check(project.root).findings
    run = project.cli("run", "t")
    assert run.returncode == 2
    assert run.stderr == f"error: {path}:{line}: {finding.message}\n"


def test_the_brief_s_three_settings_fail_the_check_through_the_cli(project):
    project.write("a.skill.md", md("  session: {store: fiel}\n", "a"))
    project.write("b.skill.md", md("  model: {maxTurns: -1}\n", "b"))
    project.write("c.skill.md", md("  model: {agent: agent-nope}\n", "c"))
    for name, errors in (("a", 2), ("b", 1), ("c", 1)):  # a: no `key`, and a misspelt store
        result = project.cli("check", f"{name}.skill.md")
        assert result.returncode == 2
        assert result.stdout.startswith(f"{name}.skill.md:5: error: Skill '{name}' ")
        assert result.stdout.endswith(f"checked 1 skill: {errors} error{'s' * (errors > 1)}, 0 warnings\n")


def test_a_main_skill_setting_is_reported_once_at_the_main_skill(project):
    project.write("proj.skill.md", MAIN.format(meta="  model:\n    maxTurns: 0\n  session:\n    store: fiel\n"))
    project.write("a.skill.md", md("  tags: [x]\n", "a"))
    project.write("b.skill.md", md("  tags: [x]\n", "b"))
    project.write("c.skill.py", 'frontmatter = {"name": "c"}\n\n\ndef run(ctx, args):\n    return 1\n')
    found = sorted(check(project.root).findings, key=lambda f: (f.line, f.message))
    assert [(f.path, f.line) for f in found] == [("proj.skill.md", 7), ("proj.skill.md", 8), ("proj.skill.md", 9)]
    assert "Skill 'proj' model.maxTurns" in found[0].message  # worded for the file's own skill


def test_checking_one_file_reports_what_its_main_skill_gives_it(project):
    project.write("proj.skill.md", MAIN.format(meta="  model:\n    maxTurns: 0\n"))
    project.write("a.skill.md", md("  tags: [x]\n", "a"))
    result = project.cli("check", "a.skill.md")
    assert result.returncode == 2
    assert result.stdout.splitlines()[0] == (
        "proj.skill.md:7: error: Skill 'a' model.maxTurns must be a number >= 1, not 0.")


def test_an_inherited_setting_is_reported_at_the_parent_file(project):
    project.write("base.skill.md", md("  session:\n    key: args.id\n    capture: [$everything]\n", "base"))
    project.write("child.skill.md", md("  $inherit: base\n", "child"))
    found = {(f.path, f.line) for f in check(project.root).findings}
    assert found == {("base.skill.md", 7)}


def test_a_combination_is_reported_where_the_cascaded_part_is_written(project):
    """`persistent` from the main skill is fine alone; with this skill's `returns` it is not."""
    project.write("proj.skill.md", MAIN.format(meta="  model:\n    persistent: true\n"))
    project.write("a.skill.md", md("  returns: {type: object}\n", "a"))
    (finding,) = check(project.root).findings
    assert (finding.path, finding.line) == ("proj.skill.md", 7)
    assert "Skill 'a' sets model.persistent and `returns`" in finding.message


def test_valid_settings_and_code_skills_give_no_findings(project):
    project.write("guard.skill.py", 'frontmatter = {"name": "guard"}\n\n\ndef run(ctx, args):\n    return None\n')
    project.write("t.yaml", "[]\n")  # the script, next to the skill
    project.write("t.skill.md", md(
        "  model:\n    id: my-model\n    agent: agent-scripted\n    script: t.yaml\n    maxTurns: 5\n"
        "    deadline: Infinity\n    temperature: 0.2\n    fallback: other\n    cache: conversation\n"
        "    contextEdit: {clearAt: 0.4}\n    guard: guard\n    maxCost: 1\n"
        "    pricing: {my-model: {input: 1, output: 2}}\n  session: args.sessionId\n"))
    project.write("c.skill.py", 'frontmatter = {"name": "c", "metadata": {"model": {"maxTurns": -1}}}\n\n\n'
                                "def run(ctx, args):\n    return 1\n")  # a code skill runs no agent
    assert check(project.root).findings == []


def test_a_main_skill_s_stores_settings_are_all_reported(project):
    project.write("proj.skill.md", MAIN.format(meta="  stores:\n    default: redsi\n    maxDeliveries: 0\n"))
    found = sorted((f.line, f.code, f.message) for f in check(project.root).findings)
    assert [(line, code) for line, code, _ in found] == [(7, "invalid-setting"), (8, "invalid-setting")]
    assert "Main skill 'proj' has an invalid `stores` setting: `default` must be memory, file or redis" in found[0][2]


AUDIT = '''frontmatter = {
    "name": "audit",
    "metadata": {"role": "middleware", "params": {"type": "object", "required": ["level"],
                                                  "properties": {"level": {"type": "integer"}}}},
}


async def run(ctx, args):
    await ctx.manager.next()
'''


@pytest.mark.parametrize(("value", "refusal"), [("{level: high}", "'level': 'high' is not of type 'integer'"),
                                                ("true", "'level' is required")])
def test_a_middleware_configured_with_values_its_params_refuse(project, value, refusal):
    """`audit: {...}` in a skill's metadata is the args of the `audit` middleware in every call."""
    project.write("audit.skill.py", AUDIT)
    path = project.write("t.skill.md", md(f"  audit: {value}\n"))
    (finding,) = check(project.root).findings
    assert (finding.path, finding.line, finding.code) == ("t.skill.md", 5, "invalid-setting")
    assert finding.message.startswith("Skill 't' configures middleware 'audit' with values it refuses: ")
    assert refusal in finding.message
    run = project.cli("run", "t")
    assert run.returncode == 2
    assert run.stderr == f"error: {path}:5: {finding.message}\n"


def test_a_valid_middleware_configuration_gives_no_finding(project):
    project.write("audit.skill.py", AUDIT)
    project.write("t.skill.md", md("  audit: {level: 2}\n"))
    assert check(project.root).findings == []


def test_an_unknown_merge_strategy_is_reported_at_its_line(project):
    project.write("t.skill.md", md("  $merge: {env: append, model: dep}\n  model: {id: x}\n"))
    (finding,) = check(project.root).findings
    assert (finding.line, finding.code) == (5, "invalid-setting")
    assert finding.message == ("Skill 't' $merge.model: Unknown $merge strategy 'dep'; use one of replace, "
                               "prepend, append, shallow, deep.")


@pytest.mark.parametrize(("meta", "line"), [("  schedule: '0 25 * * *'\n", 5),
                                            ("  schedule:\n    cron: every day\n", 6)])
def test_a_schedule_serve_cannot_parse_is_reported(project, meta, line):
    project.write("t.skill.md", md(meta))
    (finding,) = check(project.root).findings
    assert (finding.line, finding.code) == (line, "invalid-setting")
    assert "Skill 't' has an invalid `schedule`" in finding.message


def test_a_valid_schedule_gives_no_finding(project):
    project.write("t.skill.md", md("  schedule: {cron: '0 9 * * mon-fri', args: {}}\n"))
    assert check(project.root).findings == []


def test_a_guard_served_by_a_declared_mcp_server_is_not_reported(project):
    """The tool list of a server that was never started is unknown: its tools may be the guard."""
    project.write("proj.skill.md", MAIN.format(meta="  mcp:\n    policy: {command: policy-server}\n"))
    project.write("t.skill.md", md("  model:\n    guard: policy-check\n"))
    assert check(project.root).findings == []
