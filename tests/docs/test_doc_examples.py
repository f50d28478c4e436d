"""The guide's examples and quoted messages are what agentapps really does (each checked by running it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def block_after(text: str, marker: str) -> str:
    """The fenced block that follows `<!-- test: MARKER -->`."""
    found = re.search(rf"<!-- test: {re.escape(marker)} -->\n```[a-z]*\n(.*?)```", text, re.DOTALL)
    assert found, f"no block marked {marker!r}"
    return found.group(1)


def fenced(text: str, after: str, lang: str) -> str:
    """The first ```LANG block after the heading or sentence `after`."""
    found = re.search(rf"{re.escape(after)}.*?```{lang}\n(.*?)```", text, re.DOTALL)
    assert found, f"no {lang} block after {after!r}"
    return found.group(1)


# -- check.md -----------------------------------------------------------------------------------

def emitted_check_codes() -> dict[str, str]:
    """code -> severity, for every finding agentapps/check/ can produce."""
    codes: dict[str, str] = {}
    for source in sorted((REPO / "agentapps" / "check").glob("*.py")):
        text = source.read_text()
        for severity, code in re.findall(r'"(error|warning)",\s*"([a-z]+(?:-[a-z]+)+)"', text):
            codes[code] = severity
        for first, second, severity in re.findall(
                r'code = "([a-z-]+)" if .*? else "([a-z-]+)"\n\s*return site\.at\([^,]+, "(error|warning)", code',
                text):
            codes[first] = codes[second] = severity
    return codes


def documented_check_codes() -> dict[str, str]:
    table = (DOCS / "check.md").read_text()
    return dict(re.findall(r"^\| `([a-z-]+)` \| (error|warning) \|", table, re.MULTILINE))


def test_the_check_table_has_one_row_per_emitted_code_with_its_severity():
    emitted = emitted_check_codes()
    assert len(emitted) >= 19  # the scan itself works
    assert documented_check_codes() == emitted


def test_the_check_example_prints_what_the_page_shows(project):
    page = (DOCS / "check.md").read_text()
    project.cli("init")
    project.write("skills/summarize.skill.md", block_after(page, "check-example-skill"))
    shown = block_after(page, "check-example-output").splitlines()
    assert shown[0] == "$ agentapps check"
    result = project.cli("check")
    assert result.returncode == 2
    assert result.stdout.splitlines() == shown[1:]


def test_nested_quantifiers_pass_check_and_lookahead_does_not(project):
    """check.md: `unsafe-pattern` is about what RE2 refuses, not about nested quantifiers."""
    project.cli("init")
    project.write("skills/p.skill.md", """
        ---
        name: p
        description: Patterns.
        metadata:
          params: { type: object, properties: { a: { type: string, pattern: "(a+)+$" } } }
        ---
        Hi.
        """)
    assert project.cli("check", "--strict").returncode == 0
    project.write("skills/p.skill.md", (project.root / "skills/p.skill.md").read_text().replace("(a+)+$", "(?=a)a"))
    result = project.cli("check", "--json")
    assert [f["code"] for f in json.loads(result.stdout)["findings"]] == ["unsafe-pattern"]


# -- agents.md: record and replay ---------------------------------------------------------------

def readme_summarize() -> str:
    return fenced((REPO / "README.md").read_text(), "## A skill in one minute", "markdown")


def test_the_replay_script_runs_the_readme_summarize_skill(project):
    project.write("skills/summarize.skill.md", readme_summarize())
    project.write("notes.md", "# Notes\n\nShip the release on Friday.\n")
    project.write("run.json", block_after((DOCS / "agents.md").read_text(), "replay-script"))
    result = project.cli("run", "--replay", "run.json", "summarize", "--path", "notes.md")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"bullets": ["First point.", "Second point.", "Third point."]}


def test_a_script_ending_on_text_fails_a_skill_with_returns_as_the_page_says(project):
    project.write("skills/summarize.skill.md", readme_summarize())
    project.write("notes.md", "# Notes\n")
    script = json.loads(block_after((DOCS / "agents.md").read_text(), "replay-script"))
    script["turns"][-1] = {"text": "Three bullets: ..."}
    project.write("run.json", json.dumps(script))
    result = project.cli("run", "--replay", "run.json", "summarize", "--path", "notes.md")
    assert result.returncode == 1
    said = f"error: Script {project.root / 'run.json'} has no turn left for 'summarize' (turn 3); " \
           "the agent wanted another model reply: "
    assert said in result.stderr
    quoted = said.replace(str(project.root), "/…") + "…"
    assert quoted in " ".join((DOCS / "agents.md").read_text().split())
