"""`agentapps run --resume RUN_ID`: an agent run checkpoints after each completed turn and continues
from there after a failure, a kill or a timeout, its usage counted once (docs/runs.md, "Resume")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures
from tests.support.waiting import wait_for

TURNS = 20
HOLD_AT = 12  # the turn whose code waits while the file `hold` exists
USAGE = {"inputTokens": 100, "outputTokens": 10}
PRICING = {"scripted-model": {"input": 3, "output": 15}}  # USD per million tokens
WAIT_SECONDS = float(os.environ.get("AGENTAPPS_TEST_RESUME_WAIT", "20"))
# how long a run may take to reach the turn that stalls, before --timeout or model.deadline stops it
STALL_SECONDS = os.environ.get("AGENTAPPS_TEST_RESUME_STALL", "6")


def _turns(count: int = TURNS, hold_at: int = HOLD_AT) -> list[dict[str, Any]]:
    """`count` model turns: each adds its number to `memory.seen`; turn `hold_at` first calls `hold`
    (which waits while the file `hold` exists); the last finishes with what memory saw."""
    turns = []
    for n in range(1, count + 1):
        code = f"memory.seen = [...(memory.seen || []), {n}];"
        if n == hold_at:
            code = f"await ctx.manager.invoke('hold', {{}}); {code}"
        if n == count:
            code += " ctx.manager.finish({seen: memory.seen, topic: memory.args.topic});"
        turns.append({"text": f"turn {n}", "code": code, "usage": USAGE})
    return turns


HOLD = """import asyncio, pathlib
if pathlib.Path('hold').exists():
    pathlib.Path('at-hold').touch()
    while pathlib.Path('hold').exists():
        await asyncio.sleep(0.05)
return 'held'"""


def _long(agentic: Any, hold_at: int = HOLD_AT, **model: Any) -> Any:
    """The skill `long`: TURNS scripted turns, turn `hold_at` waiting on the file `hold`."""
    agentic.code("hold", HOLD)
    agentic.skill("long", _turns(hold_at=hold_at),
                  params={"type": "object", "properties": {"topic": {"type": "string"}}},
                  model={"id": "scripted-model", "pricing": PRICING, "snippetTimeout": WAIT_SECONDS + 10,
                         "maxTurns": 30, **model})
    return agentic


@pytest.fixture
def long_run(agentic: Any) -> Any:
    return _long(agentic)


def _cli(agentic: Any, *argv: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentapps", *argv], cwd=agentic.project.root,
                            env=agentic.project.env(**env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _kill_at_hold(agentic: Any, *argv: str, **env: str) -> None:
    """Start `agentapps run ARGV` as a real process, SIGKILL it while turn HOLD_AT's code waits."""
    root = agentic.project.root
    (root / "hold").touch()
    proc = _cli(agentic, "run", *argv, **env)
    try:
        wait_for(lambda: (root / "at-hold").exists() or proc.poll() is not None, timeout=WAIT_SECONDS,
                 what=f"turn {HOLD_AT}")
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    (root / "hold").unlink()


STALL = ("import asyncio, pathlib\npathlib.Path('stalled').touch()\nwhile pathlib.Path('stall').exists():\n"
         "    await asyncio.sleep(0.05)\nreturn 'went on'")  # waits while the file `stall` exists


def _interrupted(agentic: Any, *argv: str) -> tuple[int, str]:
    """`agentapps run ARGV` as a real process, sent SIGINT once the skill `stall` waits (a run that
    did not end well, with the turns before saved): its exit code and stderr."""
    root = agentic.project.root
    (root / "stalled").unlink(missing_ok=True)
    (root / "stall").touch()
    proc = _cli(agentic, "run", *argv)
    try:
        wait_for(lambda: (root / "stalled").exists() or proc.poll() is not None, timeout=WAIT_SECONDS,
                 what="the skill stall")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=WAIT_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    (root / "stall").unlink()
    return proc.returncode, err


def _runs(agentic: Any) -> list[dict[str, Any]]:
    listed = agentic.project.cli("runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)["runs"]  # type: ignore[no-any-return]


def _show(agentic: Any, run_id: int) -> dict[str, Any]:
    shown = agentic.project.cli("runs", "show", str(run_id), "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)  # type: ignore[no-any-return]


def test_a_run_killed_at_turn_12_resumes_and_ends_as_an_uninterrupted_run(long_run):
    whole = long_run.run("--json", "long", "--topic", "tides", real_process=True)
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout)

    _kill_at_hold(long_run, "long", "--topic", "tides")
    killed = _runs(long_run)[0]
    assert killed["id"] == 2 and killed["exit_code"] == -1 and killed["stop_reason"] == "unfinished"
    assert killed["turns"] == HOLD_AT - 1  # its record holds what it spent up to the last checkpoint

    resumed = long_run.run("--json", "--resume", "2", real_process=True)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["result"] == expected["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}
    assert (out["turns"], out["usage"], out["cost"]) == (expected["turns"], expected["usage"], expected["cost"])

    # one record for the run, with every turn counted once, as the uninterrupted run's
    runs = _runs(long_run)
    assert [r["id"] for r in runs] == [2, 1]
    first, again = _show(long_run, 1), _show(long_run, 2)
    for key in ("turns", "steps", "input_tokens", "output_tokens", "cost", "models"):
        assert again[key] == first[key], key
    assert (again["turns"], again["input_tokens"], again["exit_code"], again["stop_reason"]) == (
        TURNS, TURNS * USAGE["inputTokens"], 0, "finished")
    # the resumed run played the script from turn 12, not from the top
    turns = [r["turn"] for r in long_run.requests()]
    assert turns == [*range(1, TURNS + 1), *range(1, HOLD_AT + 1), *range(HOLD_AT, TURNS + 1)]

    assert not list((long_run.project.root / ".agent-apps" / "checkpoints").glob("*.json"))  # ended well: dropped
    again_resumed = long_run.run("--resume", "2")
    assert again_resumed.returncode == 7 and "ended well" in again_resumed.stderr


def test_a_changed_skill_file_refuses_to_resume_unless_forced(long_run):
    _kill_at_hold(long_run, "long", "--topic", "tides")
    skill = long_run.project.root / "long.skill.md"
    skill.write_text(skill.read_text().replace("Do the task.", "Do the task well."))

    refused = long_run.run("--resume", "1")
    assert refused.returncode == 9, refused.stderr
    assert refused.stderr.count("\n") == 1 and "long.skill.md" in refused.stderr
    assert "changed since run 1" in refused.stderr and "--force" in refused.stderr
    assert long_run.requests()[-1]["turn"] == HOLD_AT  # nothing ran

    forced = long_run.project.cli("runs", "resume", "1", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}
    assert _show(long_run, 1)["turns"] == TURNS


def test_resume_refuses_an_unknown_run_and_one_without_a_checkpoint(long_run):
    unknown = long_run.run("--resume", "41")
    assert unknown.returncode == 6 and unknown.stderr.count("\n") == 1, unknown.stderr
    assert "No run 41" in unknown.stderr and "runs list" in unknown.stderr

    long_run.skill("early", [{"error": "the model went away"}])  # fails before a turn completes
    assert long_run.run("early").returncode == 1
    none = long_run.run("--resume", "1")
    assert none.returncode == 8 and none.stderr.count("\n") == 1, none.stderr
    assert "Run 1 has no checkpoint" in none.stderr

    bad = long_run.run("--resume", "1", "long")
    assert bad.returncode == 2 and "names no skill" in bad.stderr
    param = long_run.project.cli("runs", "resume", "1", "--topic", "x")  # not told to name the skill
    assert param.returncode == 2 and param.stderr.count("\n") == 1, param.stderr
    assert "--resume RUN_ID takes no skill params" in param.stderr and "after the skill name" not in param.stderr
    alone = long_run.run("--force", "long")
    assert alone.returncode == 2 and "--force goes with --resume" in alone.stderr


def test_budgets_count_the_turns_before_the_resume(agentic):
    """maxTurns 15: a run killed during turn 13 (12 done) resumes for 3 more turns, then stops."""
    _long(agentic, hold_at=13, maxTurns=15)
    _kill_at_hold(agentic, "long")
    assert _runs(agentic)[0]["turns"] == 12

    resumed = agentic.run("--resume", "1")
    assert resumed.returncode == 4, resumed.stderr
    assert "used all 15 turns" in resumed.stderr
    shown = _show(agentic, 1)
    assert (shown["turns"], shown["stop_reason"], shown["exit_code"]) == (15, "max_turns", 4)
    assert shown["input_tokens"] == 15 * USAGE["inputTokens"]
    assert [r["turn"] for r in agentic.requests()][-3:] == [13, 14, 15]


def test_resume_with_the_checkpoints_on_redis(redis_project, agentic):  # noqa: F811 - the fixture imported above
    _long(agentic)
    url = {"AGENTAPPS_REDIS_URL": redis_project.url}
    _kill_at_hold(agentic, "long", "--topic", "tides", **url)
    # the checkpoint, and the killed run's lock: it expires, or a process on this host takes it over
    assert redis_project.keys() == [f"agentapps:{redis_project.namespace}:checkpoint-lock:run-1",
                                    f"agentapps:{redis_project.namespace}:checkpoint:run-1"]
    assert not (agentic.project.root / ".agent-apps" / "checkpoints").exists()

    resumed = agentic.run("--json", "--resume", "1", **url)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}
    assert _show(agentic, 1)["turns"] == TURNS


def test_record_writes_the_turns_before_a_kill_and_the_resume_completes_the_recording(long_run):
    recording = long_run.project.root / "rec.json"
    _kill_at_hold(long_run, "--record", str(recording), "long", "--topic", "tides")
    before = json.loads(recording.read_text())
    assert [t["text"] for t in before["turns"]] == [f"turn {n}" for n in range(1, HOLD_AT)]

    assert long_run.run("--resume", "1").returncode == 0  # records to the same file
    after = json.loads(recording.read_text())
    assert [t["text"] for t in after["turns"]] == [f"turn {n}" for n in range(1, TURNS + 1)]
    replayed = long_run.run("--json", "--replay", str(recording), "long", "--topic", "tides")
    assert json.loads(replayed.stdout)["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}


def test_a_checkpoint_holds_no_declared_secret(agentic):
    agentic.code("peek", "import os\nreturn 'the key is ' + os.environ['RESUME_TOKEN']",
                 meta={"env": ["RESUME_TOKEN"]})
    agentic.skill("peeks", [{"code": "return await ctx.manager.invoke('peek', {})"},
                            {"code": "memory.saw = 'x'"}, {"error": "the model went away"}],
                  meta={"env": ["RESUME_TOKEN"]})
    failed = agentic.run("peeks", RESUME_TOKEN="s3cr3t-resume-77")
    assert failed.returncode == 1, failed.stderr
    saved = (agentic.project.root / ".agent-apps" / "checkpoints" / "run-1.json").read_text()
    assert "s3cr3t-resume-77" not in saved and "[redacted:RESUME_TOKEN]" in saved
    assert '"turn": 2' in saved


def test_a_checkpoint_that_cannot_be_written_does_not_fail_the_run(long_run, tmp_path):
    from tests.support.full_disk import full_disk

    with full_disk(long_run.project.root / ".agent-apps" / "checkpoints"):
        result = long_run.run("--json", "long", "--topic", "tides")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"]["seen"] == list(range(1, TURNS + 1))
    assert result.stderr.count("checkpoint of run 1 was not saved") == 1, result.stderr
    assert "No space left on device" in result.stderr or "no space" in result.stderr.lower()
    assert _show(long_run, 1)["exit_code"] == 0


FLAKY = """import asyncio, pathlib
if pathlib.Path('once').exists():  # the first delivery stalls past model.deadline; a redelivery goes on
    pathlib.Path('once').unlink()
    await asyncio.sleep(30)
return 'ok'"""


def test_a_worker_resumes_a_failed_event_instead_of_restarting_it(redis_project, agentic):  # noqa: F811
    from agentapps.events.streams import streams_for

    agentic.code("flaky", FLAKY)
    turns = [{"text": f"turn {n}", "usage": USAGE, "code": f"memory.seen = [...(memory.seen || []), {n}];"
              + (" await ctx.manager.invoke('flaky', {});" if n == 3 else "")
              + (" ctx.manager.finish({seen: memory.seen});" if n == 5 else "")} for n in range(1, 6)]
    agentic.skill("triage", turns, params={"type": "object", "properties": {"event": {"type": "object"}}},
                  model={"id": "scripted-model", "pricing": PRICING, "deadline": float(STALL_SECONDS),
                         "snippetTimeout": 20})
    (agentic.project.root / "once").touch()
    streams_for(redis_project.project.boot().globals).emit("jobs", "job", {"n": 1})

    done = redis_project.cli("worker", "jobs", "--group", "g", "--handler", "triage", "--max-events", "2",
                             "--max-deliveries", "2", "-q", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "delivery 1 of 2" in done.stderr  # the first try failed (model.deadline) and was released
    # the second delivery went on from turn 3, with the first try's memory
    assert [r["turn"] for r in agentic.requests()] == [1, 2, 3, 3, 4, 5]
    rows = sorted(_runs(agentic), key=lambda r: r["id"])
    assert [r["exit_code"] for r in rows] == [4, 0]
    # each try's record holds what that try spent: the tokens of the five turns counted once
    assert sum(r["input_tokens"] for r in rows) == 5 * USAGE["inputTokens"]
    assert [r["input_tokens"] for r in rows] == [2 * USAGE["inputTokens"], 3 * USAGE["inputTokens"]]
    left = redis_project.keys()  # a list of the project's Redis keys
    assert not [k for k in left if ":checkpoint:" in k]  # the event is done: its checkpoint is dropped


def test_a_timed_out_run_resumes_and_runner_options_given_again_win(long_run):
    root = long_run.project.root
    (root / "hold").touch()
    timed_out = long_run.run("--timeout", STALL_SECONDS, "long", "--topic", "tides", real_process=True)
    assert timed_out.returncode == 4, timed_out.stderr
    assert (root / "at-hold").exists(), f"turn {HOLD_AT} was not reached in {STALL_SECONDS} s"
    [row] = _runs(long_run)
    assert (row["exit_code"], row["turns"]) == (4, HOLD_AT)  # its end was recorded over the checkpoint's
    (root / "hold").unlink()

    resumed = long_run.run("--json", "--timeout", "60", "--resume", "1", real_process=True)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}
    shown = _show(long_run, 1)
    # the turn the timeout cut short was run again, and is counted once
    assert (shown["exit_code"], shown["turns"], shown["input_tokens"]) == (0, TURNS, TURNS * USAGE["inputTokens"])


@pytest.mark.parametrize(("damage", "said"), [
    (lambda e: e.update(messages="x"), "`messages` is not a list of messages"),
    (lambda e: e["counts"].update(turn="abc"), "`counts.turn` is not a count"),
    (lambda e: e.update(args="not an object"), "`args` is not an object"),
    (lambda e: e["options"].update(timeout="soon"), "`options.timeout` is not a number"),
    (lambda e: e["options"].update(approve=["((("]), "`options.approve`: --approve '(((': Malformed"),
    (lambda e: e["options"].update(local=[{"x": 1}]), "`options.local` is not a list of overrides"),
    (None, "checkpoints/run-1.json is damaged"),  # not JSON at all
])
def test_a_damaged_checkpoint_is_refused_in_one_line_before_anything_runs(agentic, damage, said):
    agentic.skill("twice", [{"code": "memory.n = 1"}, {"error": "the model went away"}])
    assert agentic.run("twice").returncode == 1
    saved = agentic.project.root / ".agent-apps" / "checkpoints" / "run-1.json"
    if damage is None:
        saved.write_text(saved.read_text()[:200])
    else:
        body = json.loads(saved.read_text())
        damage(body["entries"][-1])
        saved.write_text(json.dumps(body))
    sent = len(agentic.requests())

    refused = agentic.run("--resume", "1")
    assert refused.returncode == 8 and refused.stderr.count("\n") == 1, refused.stderr
    assert "Run 1's checkpoint" in refused.stderr and said in refused.stderr, refused.stderr
    assert "sessions clear" not in refused.stderr  # a session's remedy, which does not reach checkpoints
    assert len(agentic.requests()) == sent  # no model turn was played


def test_approvals_local_overrides_and_record_are_reused_only_from_a_checkpoint_this_user_sealed(agentic):
    agentic.code("note", "return 'noted'")
    agentic.code("stall", STALL)
    agentic.skill("noting", [{"code": "return await ctx.manager.invoke('note', {})"},
                             {"code": "return await ctx.manager.invoke('stall', {})"}, {"text": "Done."}],
                  allowed="note stall", model={"snippetTimeout": 60})
    root = agentic.project.root
    recording = root / "rec.json"
    first = ("--approve", "note", "--record", str(recording), "noting")
    assert _interrupted(agentic, *first)[0] == 130  # stopped in turn 2, turn 1 saved
    saved = root / ".agent-apps" / "checkpoints" / "run-1.json"
    sealed = saved.read_text()
    key = agentic.project.home / ".local" / "state" / "agentapps" / "checkpoint.key"
    assert key.stat().st_mode & 0o777 == 0o600 and '"seal": ' in sealed

    # edited (here: an approval and a file outside the project added): the settings are not reused
    body = json.loads(sealed)
    elsewhere = root.parent / "elsewhere.json"
    body["entries"][-1]["options"].update(approve=["note", "shell"], record=str(elsewhere))
    saved.write_text(json.dumps(body))
    refused = agentic.run("--resume", "1", real_process=True)
    assert refused.returncode == 8 and refused.stderr.count("\n") == 1, refused.stderr
    assert "holds --approve, --record settings that were not saved by you on this machine" in refused.stderr
    assert not elsewhere.exists()
    given = agentic.run("--resume", "1", "--approve", "note", "--record", str(recording),
                        real_process=True)  # given again: they win
    assert given.returncode == 0, given.stderr
    assert not elsewhere.exists()

    # as written, but under another user's key (a checkout, another machine): the same refusal
    assert _interrupted(agentic, *first)[0] == 130
    key.write_bytes(b"another user's key, 32 bytes....")
    other = agentic.run("--resume", "2", real_process=True)
    assert other.returncode == 8 and "not saved by you on this machine" in other.stderr, other.stderr


def test_a_skill_run_by_its_path_resumes_that_file_not_the_project_skill_of_its_name(agentic):
    root = agentic.project.root
    agentic.skill("twin", [{"text": "the project's twin"}])  # same name, another file
    outside = root.parent / "outside"
    outside.mkdir()
    turns = [{"code": "memory.n = 1"}, {"code": "await ctx.manager.invoke('stall', {}); memory.n = 2"},
             {"code": "ctx.manager.finish('outside ' + memory.n)"}]
    (outside / "twin.turns.json").write_text(json.dumps({"turns": turns}))
    model = {"agent": "agent-scripted", "script": "twin.turns.json", "snippetTimeout": 60}
    (outside / "twin.skill.md").write_text(f"---\nname: twin\ndescription: The other twin.\nallowed-tools: stall\n"
                                           f"metadata: {json.dumps({'model': model})}\n---\nDo the task.\n")
    agentic.code("stall", STALL)
    code, err = _interrupted(agentic, str(outside / "twin.skill.md"))
    assert code == 130, err

    resumed = agentic.run("--json", "--resume", "1", real_process=True)
    assert resumed.returncode == 0, resumed.stderr  # not "was moved" (exit 9), nor the project's twin
    assert json.loads(resumed.stdout)["result"] == "outside 2"


def _resume_at_hold(agentic: Any, run_id: int, **env: str) -> subprocess.Popen[str]:
    """`agentapps run --resume RUN_ID` as a real process, waiting in turn HOLD_AT's code (again)."""
    root = agentic.project.root
    (root / "at-hold").unlink(missing_ok=True)
    (root / "hold").touch()
    proc = _cli(agentic, "run", "--json", "--resume", str(run_id), **env)
    wait_for(lambda: (root / "at-hold").exists() or proc.poll() is not None, timeout=WAIT_SECONDS,
             what=f"the resumed run's turn {HOLD_AT}")
    assert proc.poll() is None, proc.communicate()[1]
    return proc


def _second_resume_is_refused_while_the_first_runs(agentic: Any, **env: str) -> None:
    first = _resume_at_hold(agentic, 1, **env)
    try:
        second = agentic.run("--resume", "1", real_process=True, **env)
        assert second.returncode == 10, second.stderr
        assert second.stderr.count("\n") == 1, second.stderr
        assert "Run 1 is being run or resumed by process" in second.stderr and str(first.pid) in second.stderr
        assert agentic.requests()[-1]["turn"] == HOLD_AT  # the second played no turn
        (agentic.project.root / "hold").unlink()
        out, err = first.communicate(timeout=WAIT_SECONDS)
        assert first.returncode == 0, err
        assert json.loads(out)["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert _show(agentic, 1)["turns"] == TURNS


def test_a_second_resume_of_the_same_run_is_refused_while_the_first_runs(long_run):
    _kill_at_hold(long_run, "long", "--topic", "tides")
    _second_resume_is_refused_while_the_first_runs(long_run)


def test_a_second_resume_is_refused_with_the_lock_on_redis(redis_project, agentic):  # noqa: F811
    _long(agentic)
    url = {"AGENTAPPS_REDIS_URL": redis_project.url}
    _kill_at_hold(agentic, "long", "--topic", "tides", **url)
    _second_resume_is_refused_while_the_first_runs(agentic, **url)
    left = redis_project.keys()  # a list of the project's Redis keys
    assert not [k for k in left if ":checkpoint-lock:" in k]  # released at the end


@pytest.mark.parametrize("store", ["file", "redis"])
def test_a_run_still_running_cannot_be_resumed_and_a_killed_resume_frees_its_lock(store, request, agentic):
    env = {"AGENTAPPS_REDIS_URL": request.getfixturevalue("redis_project").url} if store == "redis" else {}
    _long(agentic)
    root = agentic.project.root
    (root / "hold").touch()
    original = _cli(agentic, "run", "long", "--topic", "tides", **env)
    try:
        wait_for(lambda: (root / "at-hold").exists() or original.poll() is not None, timeout=WAIT_SECONDS,
                 what=f"turn {HOLD_AT}")
        refused = agentic.run("--resume", "1", real_process=True, **env)  # its record says exit -1: it runs
        assert refused.returncode == 10 and f"process {original.pid}" in refused.stderr, refused.stderr
        original.send_signal(signal.SIGKILL)
        original.communicate(timeout=10)
    finally:
        if original.poll() is None:
            original.kill()
            original.communicate()
    resumer = _resume_at_hold(agentic, 1, **env)  # a lock whose holder was killed is free at once
    resumer.send_signal(signal.SIGKILL)
    resumer.communicate(timeout=10)
    (root / "hold").unlink()
    resumed = agentic.run("--json", "--resume", "1", real_process=True, **env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == {"seen": list(range(1, TURNS + 1)), "topic": "tides"}


def test_runs_list_show_and_stats_render_an_unfinished_run_and_count_a_twice_resumed_run_once(long_run):
    _kill_at_hold(long_run, "long", "--topic", "tides")
    listed = long_run.project.cli("runs", "list")
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if line.lstrip().startswith("1 ")]
    assert " unfinished " in row and " -1 " not in row
    shown = long_run.project.cli("runs", "show", "1")
    [exit_line] = [line for line in shown.stdout.splitlines() if line.startswith("exit_code")]
    assert "unfinished" in exit_line and "--resume 1" in exit_line and "-1" not in exit_line
    [stats] = json.loads(long_run.project.cli("runs", "stats", "--json").stdout)["stats"]
    assert (stats["runs"], stats["failed"], stats["unfinished"]) == (1, 0, 1)
    assert "UNFINISHED" in long_run.project.cli("runs", "stats").stdout

    resumer = _resume_at_hold(long_run, 1)  # resumed once, and killed again in the same turn
    resumer.send_signal(signal.SIGKILL)
    resumer.communicate(timeout=10)
    (long_run.project.root / "hold").unlink()
    assert long_run.run("--resume", "1", real_process=True).returncode == 0  # resumed twice: it ends

    [stats] = json.loads(long_run.project.cli("runs", "stats", "--json").stdout)["stats"]
    assert (stats["runs"], stats["failed"], stats["unfinished"]) == (1, 0, 0)
    assert (stats["input_tokens"], stats["output_tokens"]) == (TURNS * USAGE["inputTokens"], TURNS * USAGE["outputTokens"])
    assert [r["exit_code"] for r in _runs(long_run)] == [0]


def test_a_resumed_run_goes_on_with_the_fallback_model_that_had_taken_over(agentic):
    from tests.fakes.openai import FakeOpenAI, Reply

    key = "sk-test-fake-key-0123456789"
    agentic.project.write("ask.skill.md", """
        ---
        name: ask
        description: Two turns on a model that falls back.
        metadata:
          model: {provider: openai, id: gpt-missing, fallback: [gpt-4.1-mini], maxAttempts: 1}
        ---
        Do the task.
        """)
    call = {"id": "call_1", "name": "invoke", "arguments": {"code": "memory.seen = 1"}}
    fake = FakeOpenAI([Reply.error(404, "The model `gpt-missing` does not exist", code="model_not_found"),
                       Reply(text="Turn one.", tool_calls=[call]),
                       Reply.error(400, "The request was refused", code="invalid_request_error"),
                       Reply(text="Done.")], key=key).start()
    try:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": key}
        failed = agentic.run("ask", **env)
        assert failed.returncode == 1, failed.stderr
        assert [r.body["model"] for r in fake.requests] == ["gpt-missing", "gpt-4.1-mini", "gpt-4.1-mini"]

        resumed = agentic.run("--json", "--resume", "1", **env)
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["result"] == "Done."
        assert fake.requests[-1].body["model"] == "gpt-4.1-mini"  # not the model that was missing
        assert len(fake.requests) == 4
    finally:
        fake.close()


DAY = 86_400


def _failing(agentic: Any, **model: Any) -> None:
    """The skill `brief`: one turn that completes (a checkpoint), then a model error (exit 1)."""
    agentic.skill("brief", [{"code": "memory.a = 1"}, {"error": "the model went away"}], model=model or None)


def test_file_checkpoints_older_than_the_ttl_are_pruned_and_refused(agentic):
    _failing(agentic)
    folder = agentic.project.root / ".agent-apps" / "checkpoints"
    assert agentic.run("brief").returncode == 1
    assert sorted(p.name for p in folder.iterdir() if p.name != ".lock") == ["run-1.json"]  # its lock went
    (folder / ".run-1.lock").write_text("4242")  # as a run killed with kill -9 leaves it
    old = time.time() - 8 * DAY  # the default TTL is 7 days
    for name in ("run-1.json", ".run-1.lock"):
        os.utime(folder / name, (old, old))

    assert agentic.run("brief").returncode == 1  # run 2's first checkpoint prunes what expired
    assert sorted(p.name for p in folder.iterdir() if p.name != ".lock") == ["run-2.json"]
    refused = agentic.run("--resume", "1")
    assert refused.returncode == 8 and refused.stderr.count("\n") == 1, refused.stderr
    assert "expired" in refused.stderr and "7 days" in refused.stderr and "stores.checkpointTtl" in refused.stderr


def test_the_checkpoint_ttl_is_a_main_skill_setting_also_set_from_the_environment(agentic):
    _failing(agentic)
    agentic.project.write("main.skill.md", "---\nname: main\ndescription: Test project.\nmetadata:\n"
                          "  role: main\n  stores: {checkpointTtl: 3600000}\n---\nMain.\n")
    assert agentic.run("brief").returncode == 1
    saved = json.loads((agentic.project.root / ".agent-apps" / "checkpoints" / "run-1.json").read_text())
    assert time.time() - saved["entries"][-1]["savedAt"] < 60
    time.sleep(1.2)
    refused = agentic.run("--resume", "1", AGENTAPPS_LOCAL_STORES__CHECKPOINT_TTL="1000")  # 1 s, not an hour
    assert refused.returncode == 8 and "more than 1 s old" in refused.stderr, refused.stderr
    assert not (agentic.project.root / ".agent-apps" / "checkpoints" / "run-1.json").exists()  # and it went

    agentic.project.write("main.skill.md", "---\nname: main\ndescription: Test project.\nmetadata:\n"
                          "  role: main\n  stores: {checkpointTtl: 5}\n---\nMain.\n")
    bad = agentic.project.cli("check")
    said = bad.stdout + bad.stderr
    assert bad.returncode != 0 and "`checkpointTtl` must be milliseconds from 1000" in said, said
    assert "main.skill.md" in said


def test_a_redis_checkpoint_expires_after_the_ttl(redis_project, agentic):  # noqa: F811
    import redis

    _failing(agentic)
    url = {"AGENTAPPS_REDIS_URL": redis_project.url}
    assert agentic.run("brief", **url).returncode == 1
    key = f"agentapps:{redis_project.namespace}:checkpoint:run-1"
    ttl = redis.Redis.from_url(redis_project.url).pttl(key)
    assert 7 * DAY * 1000 - 60_000 < ttl <= 7 * DAY * 1000, ttl

    assert agentic.run("brief", AGENTAPPS_LOCAL_STORES__CHECKPOINT_TTL="60000", **url).returncode == 1
    ttl = redis.Redis.from_url(redis_project.url).pttl(f"agentapps:{redis_project.namespace}:checkpoint:run-2")
    assert 0 < ttl <= 60_000, ttl
