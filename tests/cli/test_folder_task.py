"""A folder skill (NAME/SKILL.md, Agent Skills format, no params) is given its task the way a user
asks for something: `run pdf "fill in form.pdf"`, `--input`, `--task`, piped stdin, `repl --task`,
serve's `args.task` and mcp-server's `task` argument all reach its agent as the first user message
(agentapps.tools.task, agentapps.cli.task). Played by the offline agent-scripted provider, which
logs what the model received."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

TASK = "fill in form.pdf from data.json"
PDF = """---
name: pdf
description: Fill PDF forms.
allowed-tools: Read
---
Fill in the form the user names with the data they name.
"""


class Folder:
    """A project whose `.claude/skills/pdf` is an Agent Skill and whose main skill selects the
    scripted model (one answer, "done") and the log of what the model received."""

    def __init__(self, project: Any) -> None:
        self.project = project
        self.log = project.root / "requests.jsonl"
        script = project.write("turns.json", json.dumps({"turns": [{"text": "done"}]}))
        model = {"agent": "agent-scripted", "script": str(script), "requests": str(self.log)}
        project.write("main.skill.md", f"---\nname: main\nmetadata: {{role: main, model: {json.dumps(model)}}}\n---\n")
        project.write(".claude/skills/pdf/SKILL.md", PDF)

    def first_message(self) -> list[Any]:
        """What the model got as the first user message."""
        return json.loads(self.log.read_text().splitlines()[0])["input"]


@pytest.fixture
def folder(project: Any) -> Folder:
    return Folder(project)


@pytest.mark.parametrize(("argv", "stdin"), [
    (["pdf", TASK], ""),
    (["pdf", *TASK.split()], ""),
    (["pdf", "--input", TASK], ""),
    (["pdf", f"--input={TASK}"], ""),
    (["pdf", "--task", TASK], ""),
    (["pdf"], TASK),
], ids=["text", "words", "input", "input=", "task", "stdin"])
def test_the_task_reaches_the_agent_as_the_users_request(folder, argv, stdin):
    result = folder.project.cli("run", *argv, input=stdin)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    assert folder.first_message() == [TASK]


def test_dry_run_prints_the_task_as_the_user_message(folder):
    result = folder.project.cli("run", "--dry-run", "pdf", TASK)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(f"\n--- user message ---\n{TASK}\n")
    assert "memory.args" not in result.stdout  # the request is text, not arguments to copy
    without = folder.project.cli("run", "--dry-run", "pdf")
    assert without.returncode == 0, without.stderr
    assert without.stdout.endswith("\n--- user message ---\nCarry out the task.\n")


def test_piped_text_is_added_below_a_task_given_on_the_command_line(folder):
    result = folder.project.cli("run", "--dry-run", "pdf", TASK, input="name: Ada\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(f"\n--- user message ---\n{TASK}\n\nname: Ada\n\n")


def test_words_after_a_double_dash_are_task_text(folder):
    result = folder.project.cli("run", "--dry-run", "pdf", "--", "--verbose", "please")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\n--- user message ---\n--verbose please\n")


def test_the_skill_describes_its_task_param(folder):
    result = folder.project.cli("run", "pdf", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: agentapps run pdf [TASK TEXT | --input TEXT | --task TEXT]")
    assert "--task STRING" in result.stdout


def test_repl_task_is_the_first_message(folder):
    result = folder.project.cli("repl", "pdf", "--task", TASK)
    assert result.returncode == 0, result.stderr
    assert folder.first_message() == [TASK]
    first = json.loads(folder.log.read_text().splitlines()[0])
    assert "memory.args" not in first["system"]  # as under `run`: the request is the message


def test_serve_takes_the_task_in_the_args(folder):
    from tests.serve.conftest import start

    server = start(folder.project)
    try:
        with server.client() as client:
            listed = {s["name"]: s for s in client.get("/skills").json()["skills"]}
            answer = client.post("/invocations", json={"skill": "pdf", "args": {"task": TASK}})
    finally:
        server.stop()
    assert listed["pdf"]["params"]["properties"]["task"]["type"] == "string"
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"] == "done"
    assert folder.first_message() == [TASK]


def test_mcp_server_offers_a_task_argument_and_passes_it_on(folder):
    from mcp import Client, StdioServerParameters

    async def call() -> tuple[Any, Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "agentapps", "mcp-server"],
                                       cwd=str(folder.project.root), env=folder.project.env())
        async with Client(params) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools["pdf"].input_schema, await client.call_tool("pdf", {"task": TASK})

    schema, result = asyncio.run(asyncio.wait_for(call(), 60))
    assert schema["properties"]["task"]["type"] == "string" and not schema.get("required")
    assert not result.is_error, result.content
    assert "".join(getattr(c, "text", "") for c in result.content) == "done"
    assert folder.first_message() == [TASK]


@pytest.mark.parametrize(("argv", "stdin", "said"), [
    (["pdf", "one", "--input", "two"], "", "Skill 'pdf' got its task twice (the text after its name and --input)"),
    (["pdf", "--task", "one", "--input", "two"], "", "Skill 'pdf' got its task twice (--task and --input)"),
    (["pdf", "one", "--arg", "task=two"], "", "Skill 'pdf' got its task twice"),
    (["--args-file", "-", "pdf", "one"], json.dumps({"task": "two"}),
     "Skill 'pdf' got its task twice (--args-file and the text after its name)"),
    (["hello", "some text"], "", "Skill 'hello' declares params (--name), so it takes no task text like 'some text'"),
    (["plain", "some text"], "", "Skill 'plain' takes no arguments (it declares no params), so it takes no task text"),
    (["typed", "some text"], "", "Skill 'typed' declares params (--path), so it takes no task text"),
])
def test_a_bad_combination_is_one_line(folder, argv, stdin, said):
    folder.project.write("plain.skill.md", "---\nname: plain\n---\nDo it.\n")
    folder.project.write("skills/typed/SKILL.md", "---\nname: typed\nmetadata:\n  params:\n    type: object\n"
                         "    properties: {path: {type: string}}\n---\nRead the path.\n")
    result = folder.project.cli("run", *argv, input=stdin)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {said}") and result.stderr.count("\n") == 1, result.stderr
    assert not folder.log.exists()  # refused before any model turn


def test_a_folder_skill_with_params_of_its_own_or_a_role_gets_no_task(project):
    from agentapps.cascade.interface import params_of

    project.write("skills/typed/SKILL.md", "---\nname: typed\nmetadata: {params: {type: object}}\n---\nx\n")
    project.write("skills/step/SKILL.md", "---\nname: step\nmetadata: {role: middleware}\n---\nx\n")
    project.write("skills/plain/SKILL.md", "---\nname: plain\n---\nx\n")
    lookup = project.boot().globals.lookup
    assert params_of(lookup.find("typed"), lookup) == {"type": "object"}
    assert params_of(lookup.find("step"), lookup) is None
    assert list(params_of(lookup.find("plain"), lookup)["properties"]) == ["task"]
