"""One CLI boundary: every command turns every failure into a one-line error and an exit code, with
a traceback only when asked for (-v), and JSON on stdout when --json was given."""

from __future__ import annotations

import json

import pytest

from agentapps.cli import run_options

BROKEN_DESCRIBE = '''
frontmatter = {"name": "skill-describe", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    return "not the object the command expects"
'''


def test_an_internal_error_in_any_command_is_one_line_without_traceback(project):
    project.write("skill-describe.skill.py", BROKEN_DESCRIBE)
    result = project.cli("describe", "hello")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: internal error: TypeError")


@pytest.mark.parametrize("argv", [["describe", "nosuch", "--json"], ["which", "nosuch", "--json"],
                                  ["list", "--json", "--tag", "x", "--query", "y"], ["run", "--json", "nosuch"]])
def test_json_is_asked_for_json_is_given_on_failure_too(project, argv):
    result = project.cli(*argv)
    if result.returncode != 0:
        payload = json.loads(result.stdout)
        assert payload["ok"] is False and payload["error"]["exit_code"] == result.returncode


def test_verbose_shows_the_traceback_for_any_command(project):
    project.write("skill-describe.skill.py", BROKEN_DESCRIBE)
    result = project.cli("describe", "-v", "hello")
    assert result.returncode == 1 and "Traceback" in result.stderr


@pytest.mark.parametrize(("argv", "code"), [
    (["which", "nosuch-skill"], 2), (["describe", "nosuch-skill"], 2), (["sessions", "show", "nokey"], 2),
    (["check", "no/such/path"], 2), (["run", "nosuch-skill"], 2), (["list", "--bogus"], 2),
])
def test_errors_exit_with_their_code_in_one_line(project, argv, code):
    result = project.cli(*argv)
    assert result.returncode == code
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: ")


def test_the_runner_option_table_drives_parser_usage_and_misplacement():
    text = run_options.usage()
    for option in run_options.OPTIONS:
        assert all(name in text for name in option.names), option.names
        sample = {"local": "model.id=1"}.get(option.dest, "1")  # a value each option accepts
        parsed = run_options.parse([*option.names[-1:], *([sample] if option.metavar else []), "hello"])
        if option.dest != "help":
            assert parsed is not None and parsed.ref == "hello"


def test_a_runner_option_after_the_skill_name_is_refused_with_the_fix(project):
    result = project.cli("run", "hello", "--name", "Ada", "--timeout", "5")
    assert result.returncode == 2
    assert "--timeout is an option of 'agentapps run': put it before the skill name" in result.stderr


def test_approve_patterns_are_checked_when_read(project):
    result = project.cli("run", "--approve", "file-{write", "hello", "--name", "x")
    assert result.returncode == 2 and "--approve 'file-{write'" in result.stderr


def test_the_command_table_lists_exactly_the_commands_there_are(project):
    from agentapps.cli.app import app
    from agentapps.cli.commands import COMMANDS

    typer_commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    typer_commands |= {g.name for g in app.registered_groups}
    own_parsers = {"run", "list", "completion"}  # cli/run_options.py, listing.py, completion.py: one parser each
    assert set(COMMANDS) == typer_commands | own_parsers and not typer_commands & own_parsers
    top = project.cli("--help")
    assert top.returncode == 0 and all(f"  {name}" in top.stdout for name in COMMANDS)


@pytest.mark.parametrize("group", ["runs", "sessions"])
def test_a_command_group_alone_shows_its_help(project, group):
    result = project.cli(group)
    assert result.returncode == 0
    assert result.stdout.startswith(f"Usage: agentapps {group} [OPTIONS] COMMAND")


def test_an_unknown_runner_option_says_how_to_give_the_main_skill_a_param(project):
    result = project.cli("run", "--question", "hi")
    assert result.returncode == 2
    assert "--arg question=VALUE" in result.stderr


def test_a_missing_replay_script_fails_before_the_agent_starts_and_names_the_file_once(project):
    project.write("ask.skill.md", "---\nname: ask\n---\nSay hi.\n")
    result = project.cli("run", "--replay", "nothere.json", "ask")
    assert result.returncode == 2
    assert result.stderr == f"error: {project.root / 'nothere.json'}: Cannot read the script: No such file or directory.\n"


def test_recording_a_run_with_no_agent_warns_that_nothing_was_written(project):
    project.write("plain.skill.py", 'frontmatter = {"name": "plain"}\n\ndef run(ctx, args):\n    return "ok"\n')
    result = project.cli("run", "--record", "rec.json", "plain")
    assert result.returncode == 0 and result.stdout == "ok\n"
    assert "nothing was recorded" in result.stderr and not (project.root / "rec.json").exists()


def test_replaying_a_script_for_a_run_with_no_agent_warns_that_it_was_not_used(project):
    project.write("plain.skill.py", 'frontmatter = {"name": "plain"}\n\ndef run(ctx, args):\n    return "ok"\n')
    project.write("turns.json", '{"turns": [{"text": "hi"}]}')
    result = project.cli("run", "--replay", "turns.json", "plain")
    assert result.returncode == 0 and result.stdout == "ok\n"
    assert result.stderr == (f"warning: --replay {project.root / 'turns.json'}: the script was not used "
                             "(no agent ran: 'plain' is a code skill).\n")


@pytest.mark.parametrize("typo", ["nonexist", "helo"])
def test_suggestions_for_an_unknown_skill_are_close_names_only(project, typo):
    result = project.cli("run", typo)
    assert result.returncode == 2
    assert "'context'" not in result.stderr and "'shell'" not in result.stderr
    assert ("Did you mean 'hello'?" in result.stderr) == (typo == "helo")
