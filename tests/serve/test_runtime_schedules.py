"""Schedules made at run time (schedule-create/list/delete): kept in the project's state store, run
by `agentapps serve` once per due time, and the times missed while no server ran handled as each
schedule's `catchUp` says."""

from __future__ import annotations

import json
import time

import pytest

from tests.serve.conftest import start
from tests.support.hourly import hourly_missed
from tests.support.waiting import wait_for

NOTE = """
frontmatter = {"name": "note", "description": "Appends its word to ran.log.", "metadata": {
    "params": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}

def run(ctx, args):
    with open("ran.log", "a") as out:
        out.write(args["word"] + "\\n")
    return args["word"]
"""


def _ran(project) -> list[str]:
    log = project.root / "ran.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_schedule_made_at_run_time_runs_under_serve_until_it_is_deleted(project):
    project.write("note.skill.py", NOTE)
    made = project.cli("run", "--json", "schedule-create", "--skill", "note", "--cron", "* * * * * *",
                       "--args", '{"word": "tick"}', "--id", "every-second")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["result"]["schedule"]["id"] == "every-second"
    listed = json.loads(project.cli("run", "--json", "schedule-list").stdout)["result"]["schedules"]
    assert [(s["id"], s["skill"], s["args"]) for s in listed] == [("every-second", "note", {"word": "tick"})]
    served = start(project)
    try:
        wait_for(lambda: len(_ran(project)) >= 2, what="two scheduled runs")
        deleted = project.cli("run", "--json", "schedule-delete", "--id", "every-second")
        assert json.loads(deleted.stdout)["result"] == {"ok": True, "existed": True}
        time.sleep(1.5)  # the server re-reads the store every second: one run may already be under way
        settled = len(_ran(project))
        time.sleep(2.5)
        assert len(_ran(project)) == settled  # no run after the deletion took effect
    finally:
        served.stop()
    assert set(_ran(project)) == {"tick"}


@pytest.mark.parametrize(("catch_up", "runs"), [("skip", 0), ("once", 1), ("each", 3)])
def test_times_missed_while_no_server_ran_follow_catch_up(project, catch_up, runs):
    from agentapps.stores.schedules import create
    from agentapps.stores.state import store_for

    project.write("note.skill.py", NOTE)
    cron, made, _ = hourly_missed(3)  # three due times passed while nothing ran
    create(store_for(project.boot().globals), "note", cron, args={"word": catch_up},
           catch_up=catch_up, schedule_id="hourly", now=made)
    served = start(project)
    try:
        if runs:
            wait_for(lambda: len(_ran(project)) >= runs, what=f"{runs} catch-up runs")
        time.sleep(2.5)  # longer than a look at the store: nothing more comes
        assert _ran(project) == [catch_up] * runs
    finally:
        served.stop()
    served = start(project)  # the next server knows what ran: nothing runs twice
    try:
        time.sleep(2.5)
        assert _ran(project) == [catch_up] * runs
    finally:
        served.stop()


@pytest.mark.parametrize(("argv", "code", "says"), [
    (["--skill", "nope", "--cron", "* * * * *"], 2, "Unknown skill 'nope'"),
    (["--skill", "note", "--cron", "61 * * * *", "--args", '{"word": "x"}'], 2, "bad minute"),
    (["--skill", "note", "--cron", "* * * * *", "--args", '{"wrd": "x"}'], 2, "'word' is required"),
    (["--skill", "note", "--cron", "* * * * *", "--catchUp", "later"], 2, "catchUp"),
    (["--skill", "note", "--cron", "* * * * *", "--id", "Bad Id"], 2, "id"),
])
def test_bad_schedules_are_refused_when_made(project, argv, code, says):
    project.write("note.skill.py", NOTE)
    result = project.cli("run", "schedule-create", *argv)
    assert result.returncode == code and says in result.stderr, result.stderr
    assert json.loads(project.cli("run", "--json", "schedule-list").stdout)["result"]["schedules"] == []


def test_args_are_checked_against_params_the_skill_inherits(project):
    project.write("note.skill.py", NOTE)
    project.write("echo.skill.md", "---\nname: echo\ndescription: Notes a word, as note does.\n"
                                   "metadata:\n  $inherit: note\n---\nSay :arg[word].\n")
    refused = project.cli("run", "schedule-create", "--skill", "echo", "--cron", "* * * * *", "--args", '{"wrd": "x"}')
    assert refused.returncode == 2 and "'word' is required" in refused.stderr, refused.stderr
    made = project.cli("run", "schedule-create", "--skill", "echo", "--cron", "* * * * *", "--args", '{"word": "x"}')
    assert made.returncode == 0, made.stderr


def test_an_id_in_use_is_refused(project):
    project.write("note.skill.py", NOTE)
    first = project.cli("run", "schedule-create", "--skill", "note", "--cron", "0 9 * * *", "--args",
                        '{"word": "a"}', "--id", "morning")
    assert first.returncode == 0, first.stderr
    again = project.cli("run", "schedule-create", "--skill", "note", "--cron", "0 10 * * *", "--args",
                        '{"word": "b"}', "--id", "morning")
    assert again.returncode == 1 and "A schedule 'morning' exists already" in again.stderr
