"""`agentapps list` parses its own argv: every option, its help and its usage errors (click's rules
and wording, as when typer parsed it)."""

from __future__ import annotations

import json

import pytest

HELP = """\
Usage: agentapps list [OPTIONS]

  List the skills on the search path (the winners; see 'which' for what they
  shadow).

Options:
  -Q, --query <str>  Text to find in names and descriptions.
  -t, --tag <str>    Only skills with this tag (repeatable: all must match).
  -a, --all          Include hidden skills and the pipeline's middleware.
  --json             Print JSON.
  -h, --help         Show this message and exit.
"""

SEE = "(see 'agentapps list --help')"


@pytest.fixture
def listed(project):
    project.write("greet.skill.py", 'frontmatter = {"name": "greet", "description": "Say hi.", "metadata": {"tags": ["x", "y"]}}\n'
                  "\ndef run(ctx, args):\n    return 'hi'\n")
    project.write("quiet.skill.py", 'frontmatter = {"name": "quiet", "description": "Hidden.", '
                  '"metadata": {"tags": ["x"], "visibility": "hidden"}}\n\ndef run(ctx, args):\n    return 1\n')

    def names(*argv: str) -> list[str]:
        result = project.cli("list", "--json", *argv)
        assert result.returncode == 0, result.stderr
        return sorted(s["name"] for s in json.loads(result.stdout)["skills"] if s["name"] in ("greet", "quiet"))

    return names


@pytest.mark.parametrize("argv", [["-h"], ["--help"], ["-ah"], ["-h", "extra"], ["-Q", "x", "--help"]])
def test_help_is_the_same_text_as_before(project, argv):
    result = project.cli("list", *argv)
    assert (result.returncode, result.stdout, result.stderr) == (0, HELP, "")


@pytest.mark.parametrize(("argv", "expected"), [
    ([], ["greet"]),
    (["--all"], ["greet", "quiet"]),
    (["-a"], ["greet", "quiet"]),
    (["--query", "greet"], ["greet"]),
    (["--query=Hidden", "-a"], ["quiet"]),
    (["-Q", "nothing-like-it"], []),
    (["-Qgreet"], ["greet"]),  # a short option's value may follow it directly
    (["-aQ", "Hidden"], ["quiet"]),  # short flags combine; the one taking a value ends the group
    (["-Q", "a", "-Q", "greet"], ["greet"]),  # the last --query wins
    (["--query="], ["greet"]),  # an empty query filters nothing
    (["--tag", "x", "-a"], ["greet", "quiet"]),
    (["-t", "x", "-t", "y", "-a"], ["greet"]),  # repeatable: every tag must match
    (["--tag=y"], ["greet"]),
    (["--"], ["greet"]),
])
def test_every_option_selects_what_it_says(listed, argv, expected):
    assert listed(*argv) == expected


def test_the_plain_listing_is_a_table_of_name_source_and_description(project):
    project.write("greet.skill.py", 'frontmatter = {"name": "greet", "description": "Say hi."}\n'
                  "\ndef run(ctx, args):\n    return 'hi'\n")
    result = project.cli("list", "-Q", "greet")
    assert result.returncode == 0 and result.stdout.split() == ["greet", "project", "Say", "hi."]


@pytest.mark.parametrize(("argv", "message"), [
    (["--bogus"], f"No such option: --bogus {SEE}"),
    (["-x"], f"No such option: -x {SEE}"),
    (["-ax"], f"No such option: -x {SEE}"),
    (["-a=x"], f"No such option: -= {SEE}"),
    (["---x"], f"No such option: ---x {SEE}"),
    (["--QUERY", "x"], f"No such option: --QUERY {SEE}"),
    (["--quer", "x"], f"No such option: --quer (Possible options: --query) {SEE}"),
    (["--al"], f"No such option: --al (Possible options: --all, --help, --tag) {SEE}"),
    (["--a\x01"], f"No such option: --a\\x01 (Possible options: --all, --tag) {SEE}"),
    (["-h", "--bogus"], f"No such option: --bogus {SEE}"),  # a usage error beats help
    (["-Q"], f"Option '-Q' requires an argument. {SEE}"),
    (["--query"], f"Option '--query' requires an argument. {SEE}"),
    (["-t"], f"Option '-t' requires an argument. {SEE}"),
    (["--tag"], f"Option '--tag' requires an argument. {SEE}"),
    (["-hQ"], f"Option '-Q' requires an argument. {SEE}"),
    (["--all=1"], f"Option '--all' does not take a value. {SEE}"),
    (["--json=1"], f"Option '--json' does not take a value. {SEE}"),
    (["--help=1"], f"Option '--help' does not take a value. {SEE}"),
    (["extra"], f"Got unexpected extra argument(s) (extra) {SEE}"),
    (["extra1", "-a", "extra2"], f"Got unexpected extra argument(s) (extra1 extra2) {SEE}"),
    (["-"], f"Got unexpected extra argument(s) (-) {SEE}"),
    (["--", "--json"], f"Got unexpected extra argument(s) (--json) {SEE}"),
    (["x\ty"], f"Got unexpected extra argument(s) (x\\x09y) {SEE}"),
])
def test_usage_errors_are_one_line_with_exit_2(project, argv, message):
    result = project.cli("list", *argv)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"error: {message}\n")


def test_a_usage_error_with_json_is_also_a_json_failure(project):
    result = project.cli("list", "--json", "-Q")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"] == {
        "type": "UsageError", "message": f"Option '-Q' requires an argument. {SEE}", "exit_code": 2,
        "skill": None, "file": None, "line": None}


def test_a_value_may_look_like_an_option(listed):
    assert listed("-Q", "--json") == []  # `--json` is the query here, as click reads it


def test_the_pipelines_middleware_is_listed_only_with_all(project):
    """A user never runs a middleware skill (`describe` shows a skill's chain): it used to fill the
    list between the skills one does run."""
    listed = project.cli("list").stdout.split()
    assert "hello" in listed and not {"execute", "directives", "session", "agent-execute"} & set(listed)
    everything = project.cli("list", "--all").stdout.split()
    assert {"execute", "directives", "session", "agent-execute"} <= set(everything)
    as_json = json.loads(project.cli("list", "--json").stdout)["skills"]
    assert "execute" not in {s["name"] for s in as_json}


def test_on_a_terminal_a_long_description_ends_at_a_word_with_an_ellipsis(project):
    from tests.support.terminal import Terminal

    words = "Summarise the incident reports of the last quarter into a table of causes and owners"
    project.write("long.skill.md", f"---\nname: long\ndescription: {words}.\n---\nx\n")
    term = Terminal(project, "list", COLUMNS="60", LINES="40")
    assert term.finish() == 0
    line = next(row for row in term.output.splitlines() if row.startswith("long "))
    assert len(line) <= 60 and line.endswith("…"), line
    shown = line.split("project", 1)[1].strip().rstrip("…")
    assert words.startswith(shown) and words[len(shown)] == " ", line  # cut between two words
    piped = next(row for row in project.cli("list").stdout.splitlines() if row.startswith("long "))
    assert piped.endswith(f"{words}.")  # a pipe keeps it whole, for grep


@pytest.mark.parametrize(("text", "room", "shown"), [
    ("short", 20, "short"),
    ("one two three four", 10, "one two…"),
    ("a, b; c", 5, "a, b…"),
    ("x" * 30, 10, "x" * 9 + "…"),  # one word longer than the room: cut after all
    ("spread\n  over   lines", 40, "spread over lines"),
])
def test_fit_cuts_between_words(text, room, shown):
    from agentapps.cli.listing import fit

    assert fit(text, room) == shown and len(fit(text, room)) <= room
