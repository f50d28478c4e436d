"""`agentapps worker --schedules`: the project's stored schedules (schedule-create) run by workers
as `agentapps serve` runs them: each due time once across every worker and server sharing the
store, missed times as `catchUp` says, every run in the run log, and none lost on SIGTERM (real
processes; the file store, or Redis where the processes share it as replicas would)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from itertools import combinations
from typing import Any

from tests.serve.conftest import start
from tests.support.hourly import hourly_missed
from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures
from tests.support.waiting import wait_for

STOP_SECONDS = float(os.environ.get("AGENTAPPS_TEST_STOP_SECONDS", "20"))

NOTE = """
import asyncio
import os
import time

frontmatter = {"name": "note", "description": "Notes when it ran.", "metadata": {
    "params": {"type": "object", "properties": {"word": {"type": "string"}, "sleep": {"type": "number"}},
               "required": ["word"]}}}

async def run(ctx, args):  # async: runs overlap, and a stop finds one under way
    here = str(ctx.globals.config.project)
    with open(os.path.join(here, "started.log"), "a") as out:
        out.write(f"{os.getpid()} {time.time()} {args['word']}\\n")
    await asyncio.sleep(args.get("sleep", 0))
    with open(os.path.join(here, "ran.log"), "a") as out:
        out.write(f"{os.getpid()} {time.time()} {args['word']}\\n")
    return args["word"]
"""


def lines(project: Any, name: str = "ran.log") -> list[tuple[int, float, str]]:
    path = project.root / name
    if not path.exists():
        return []
    return [(int(pid), float(when), word) for pid, when, word in
            (line.split() for line in path.read_text().splitlines())]


def worker(project: Any, *argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentapps", "worker", *argv], cwd=project.root,
                            env=project.env(**(env or {})), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def schedule(project: Any, *argv: str) -> None:
    made = project.cli("run", "schedule-create", "--skill", "note", *argv)
    assert made.returncode == 0, made.stderr


def records(project: Any, skill: str) -> list[dict[str, Any]]:
    listed = project.cli("runs", "list", "--skill", skill, "--json")
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout)["runs"])


def last_due(project: Any, schedule_id: str) -> float | None:
    kept = json.loads(project.cli("run", "--json", "schedule-list").stdout)["result"]["schedules"]
    return next(float(s["lastDue"]) for s in kept if s["id"] == schedule_id and s["lastDue"] is not None)


def test_a_worker_runs_a_due_schedule_and_a_sigterm_loses_no_run_or_record(project):
    project.write("note.skill.py", NOTE)
    schedule(project, "--cron", "* * * * * *", "--args", '{"word": "tick", "sleep": 1.5}', "--id", "tick")
    began = time.time()
    proc = worker(project, "--schedules", "--json")
    try:
        # a run has ended and another is under way (each sleeps 1.5 s, one starts every second)
        wait_for(lambda: lines(project) and len(lines(project, "started.log")) > len(lines(project)),
                 what="a scheduled run ended and one under way")
        code, out, err = stop(proc)
    finally:
        proc.kill()
    assert code == 143, err
    summary = json.loads(out)
    started, ran = lines(project, "started.log"), lines(project)
    assert len(ran) == len(started) >= 2  # the run under way at the signal finished
    assert {pid for pid, _, _ in ran} == {proc.pid}
    assert summary["schedules"] == {"started": len(ran), "succeeded": len(ran), "failed": 0}
    assert summary["stoppedBy"] == "SIGTERM"
    logged = records(project, "note")
    assert len(logged) == len(ran) and all(r["exit_code"] == 0 for r in logged)
    assert began < last_due(project, "tick") <= time.time()  # the due times run were written back


def test_two_workers_run_each_due_time_once(project):
    project.write("note.skill.py", NOTE)
    schedule(project, "--cron", "*/2 * * * * *", "--args", '{"word": "even"}', "--id", "even")
    both = [worker(project, "--schedules", "-q"), worker(project, "--schedules", "-q")]
    try:
        wait_for(lambda: len(lines(project)) >= 3, timeout=30, what="three scheduled runs")
    finally:
        codes = [stop(proc)[0] for proc in both]
    assert codes == [143, 143]
    ran = lines(project)
    # the due times are 2 s apart: two runs of one due time would start within a fraction of that
    for (_, first, _), (_, second, _) in combinations(ran, 2):
        assert abs(second - first) > 1.0, ran
    assert len(records(project, "note")) == len(ran)


def test_workers_and_a_server_run_each_missed_time_once(redis_project):  # noqa: F811 - the fixture
    from agentapps.stores.schedules import create
    from agentapps.stores.state import store_for

    project = redis_project.project
    project.write("note.skill.py", NOTE)
    cron, made, last = hourly_missed(5)  # 5 due times missed
    create(store_for(project.boot().globals), "note", cron, args={"word": "missed"},
           catch_up="each", schedule_id="hourly", now=made)
    env = {"AGENTAPPS_REDIS_URL": redis_project.url}
    workers = [worker(project, "--schedules", "-q", env=env), worker(project, "--schedules", "-q", env=env)]
    served = start(project, env=env)  # all three see the schedule first at about the same time
    try:
        wait_for(lambda: len(lines(project)) >= 5, what="the five missed runs")
        time.sleep(2.5)  # longer than a look at the store: nothing more comes
    finally:
        served.stop()
        codes = [stop(proc)[0] for proc in workers]
    assert codes == [143, 143]
    assert [word for _, _, word in lines(project)] == ["missed"] * 5
    kept = store_for(project.boot().globals).get("schedule:hourly")
    assert kept["lastDue"] == last  # the newest missed time, written back


def test_a_worker_needs_a_topic_or_schedules_and_topic_options_need_a_topic(project):
    cases = [((), "Name a TOPIC (with --group and --handler), or pass --schedules."),
             (("--schedules", "--group", "g"), "--group, --handler and --max-events go with a TOPIC."),
             (("--schedules", "--max-events", "3"), "--group, --handler and --max-events go with a TOPIC."),
             (("jobs", "--schedules"), "A TOPIC needs --group and --handler.")]
    for argv, says in cases:
        result = project.cli("worker", *argv, real_process=True, timeout=30)
        assert result.returncode == 2 and says in result.stderr, (argv, result.stderr)
