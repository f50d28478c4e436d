"""Other agents' tool names in allowed-tools map onto built-ins and constraints (Agent Skills as they are)."""

from __future__ import annotations

import json

import pytest

from agentapps.errors import DeniedError
from agentapps.tools.foreign import translate
from agentapps.tools.policy import Policy


@pytest.mark.parametrize(("token", "patterns"), [
    ("Read", ["file-read"]),
    ("Write", ["file-write"]),
    ("Edit", ["file-read", "file-write"]),
    ("MultiEdit", ["file-read", "file-write"]),
    ("Glob", ["file-list"]),
    ("Grep", ["file-search"]),
    ("WebFetch", ["http(url=*)"]),
    ("WebFetch(domain:example.com)", ["http(url={https://example.com,https://example.com/*})"]),
    ("Bash", ["shell"]),
    ("Bash(*)", ["shell"]),
    ("Bash(git:*)", ["shell(command={git,git *})"]),
    ("Bash(npm run test:*)", ["shell(command={npm run test,npm run test *})"]),
    ("Bash(git  status)", ["shell(command=git status)"]),
    ("Bash(npm run *)", ["shell(command=npm run *)"]),
    ("Read(./docs/**)", ["file-read(path=docs/*)"]),
    ("Edit(src/**/*.ts)", ["file-read(path=src/*.ts)", "file-write(path=src/*.ts)"]),
    ("Task", ["agent"]),
    ("mcp__github__create_issue", ["github-create-issue"]),
    ("mcp__github", ["github-*"]),
    ("mcp__github__*", ["github-*"]),
    ("file-read", ["file-read"]),  # our own names are untouched
    ("#files", ["#files"]),
])
def test_foreign_names_map_to_our_patterns(token, patterns):
    mapped = translate(token)
    assert list(mapped.patterns) == patterns and mapped.problem is None


@pytest.mark.parametrize(("token", "why"), [
    ("WebSearch", "no equivalent"),
    ("TodoWrite", "memory"),
    ("Bash(* --version)", "starting with '*'"),
    ("Bash(git;id:*)", "plain words"),
    ("Bash(rm $(x):*)", "plain words"),
    ("Bash(echo 'a b':*)", "plain words"),
    ("Read(~/.ssh/id_rsa)", "inside the project"),
    ("Read(/etc/passwd)", "inside the project"),
    ("Read(../other/*)", "inside the project"),
    ("WebFetch(example.com/path)", "domain:HOST"),
])
def test_what_cannot_be_mapped_exactly_maps_to_nothing(token, why):
    mapped = translate(token)
    assert mapped.patterns == () and why in (mapped.problem or "")


def test_a_skill_with_foreign_names_loads_and_its_policy_parses():
    policy = Policy.parse("Read Grep Bash(git:*) WebSearch mcp__github__get_issue", "pdf")
    assert [r.text for r in policy.rules or ()] == [
        "file-read", "file-search", "shell(command={git,git *})", "github-get-issue"]


RUNNER = '''
frontmatter = {{"name": "runner", "allowed-tools": {allowed!r}, "metadata": {{"params": {{"type": "object"}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke("shell", args)
'''


@pytest.fixture
def echo_only(project):
    project.write("runner.skill.py", RUNNER.format(allowed="Bash(echo:*)"))
    return project


@pytest.mark.parametrize("args", [
    {"command": "echo hello"},
    {"command": "echo"},
    {"command": "echo  'two words'"},
    {"argv": ["echo", "a; id"]},  # one argument: no shell reads it
    {"command": "/bin/sh -c 'echo hi'"},  # a literal script is read as the commands it runs
    {"argv": ["sh", "-c", "echo hi"]},
])
def test_a_bash_prefix_grant_admits_commands_that_start_with_it(echo_only, args):
    assert echo_only.invoke("runner", args)["exitCode"] == 0


@pytest.mark.parametrize("args", [
    {"command": "echo hi; id"},
    {"command": "echo hi && id"},
    {"command": "echo $(id)"},
    {"command": "echo `id`"},
    {"command": "echo hi | sh"},
    {"command": "echo hi > out.txt"},
    {"command": "echo hi\nid"},
    {"command": "echoid"},
    {"command": "id"},
    {"command": "/bin/sh -c 'echo hi; id'"},
    {"argv": ["sh", "-c", "echo \"$0\""]},
    {"command": "echo hi", "input": "id"},  # stdin is an action too: the prefix does not constrain it
])
def test_a_bash_prefix_grant_admits_nothing_else(echo_only, args):
    with pytest.raises(DeniedError):
        echo_only.invoke("runner", args)
    assert not (echo_only.root / "out.txt").exists()


def test_describe_shows_what_foreign_names_mapped_to(project):
    project.write("tools/SKILL.md", """
        ---
        name: tools
        description: A public-style skill.
        allowed-tools: Read Bash(git:*) WebSearch
        ---
        Do things.
        """)
    text = project.cli("describe", "tools").stdout
    assert "Bash(git:*) -> shell(command={git,git *})" in text and "WebSearch -> nothing" in text
    data = json.loads(project.cli("describe", "--json", "tools").stdout)
    assert {"name": "Read", "mapsTo": ["file-read"], "problem": None} in data["foreignTools"]


def test_check_warns_about_unmapped_names_but_passes(project):
    project.write("tools/SKILL.md", """
        ---
        name: tools
        description: A public-style skill.
        allowed-tools: Read WebSearch
        ---
        Do things.
        """)
    result = project.cli("check")
    assert result.returncode == 0, result.stdout
    assert "'WebSearch' has no equivalent here" in result.stdout and "warning" in result.stdout
    assert "error" not in result.stdout.split("checked")[0]
    assert project.cli("check", "--strict").returncode == 2
