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
