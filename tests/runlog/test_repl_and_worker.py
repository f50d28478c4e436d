"""`agentapps repl` and `agentapps worker` land in the run log too: one record per message sent in
the REPL and one per event a worker handles, each with its own usage and cost (real processes; the
worker against the machine's Redis)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.runlog.test_runlog import SONNET, db, runs
from tests.support.redis_server import redis_project, redis_url  # noqa: F401 - fixtures
from tests.support.terminal import CTRL_C, CTRL_D, Terminal
from tests.support.waiting import wait_for

PRICE_IN, PRICE_OUT = 3 / 1e6, 15 / 1e6  # Sonnet 4.5, per token


def cost(tokens_in: int, tokens_out: int) -> float:
    return tokens_in * PRICE_IN + tokens_out * PRICE_OUT


def oldest_first(agentic: Any, *argv: str) -> list[dict[str, Any]]:
    return list(reversed(runs(agentic, "list", *argv)["runs"]))


# -- the REPL ----------------------------------------------------------------------------------


@pytest.fixture
def talk(agentic):
    """`talk`: three user turns; the second runs a sub-agent (whose spending is that turn's too)."""
    agentic.skill("helper", [{"text": "helped", "usage": {"inputTokens": 500, "outputTokens": 10}}],
                  model={"id": SONNET})
    agentic.skill("talk", [
        {"text": "One.", "usage": {"inputTokens": 1000, "outputTokens": 100}},
        {"text": "Asking.", "code": "return await ctx.manager.invoke('helper', {})",
         "usage": {"inputTokens": 2000, "outputTokens": 200}},
        {"text": "Two.", "usage": {"inputTokens": 3000, "outputTokens": 300}},
        {"text": "Three.", "usage": {"inputTokens": 4000, "outputTokens": 400}}], model={"id": SONNET})
    return agentic


def test_each_message_sent_in_the_repl_is_a_record_with_that_turns_spending(talk):
    result = talk.project.cli("repl", "talk", input="first\nsecond\nthird\n")
    assert result.returncode == 0, result.stderr
    first, second, third = oldest_first(talk)
    assert {r["skill"] for r in (first, second, third)} == {"talk"}
    assert [r["exit_code"] for r in (first, second, third)] == [0, 0, 0]
    assert (first["input_tokens"], first["output_tokens"], first["turns"], first["steps"]) == (1000, 100, 1, 0)
    # the second message: two turns of its own plus the helper's one, one step, 2000+500+3000 tokens in
    assert (second["input_tokens"], second["output_tokens"], second["turns"], second["steps"]) == (5500, 510, 3, 1)
    assert (third["input_tokens"], third["output_tokens"], third["turns"]) == (4000, 400, 1)
    assert first["cost"] == pytest.approx(cost(1000, 100)) and second["cost"] == pytest.approx(cost(5500, 510))
    assert first["model"] == SONNET and first["stop_reason"] == "answered"
    assert len({r["args_digest"] for r in (first, second, third)}) == 3  # a digest of each message
    assert "first" not in json.dumps(runs(talk, "show", str(first["id"])))
    [stats] = runs(talk, "stats")["stats"]
    assert (stats["skill"], stats["runs"], stats["input_tokens"]) == ("talk", 3, 10500)
    assert stats["cost"] == pytest.approx(cost(10500, 1010))  # the whole session, split by turn


def test_a_session_that_ends_the_repl_on_an_error_logs_the_turn_in_flight(agentic):
    agentic.skill("talk", [{"text": "One.", "usage": {"inputTokens": 1000, "outputTokens": 100}},
                           {"text": "Two.", "usage": {"inputTokens": 1000, "outputTokens": 100}}],
                  model={"id": SONNET, "maxCost": 0.005})
    result = agentic.project.cli("repl", "talk", input="first\nsecond\n")
    assert result.returncode == 4, result.stderr
    first, second = oldest_first(agentic)
    assert (first["exit_code"], first["error"], first["turns"]) == (0, None, 1)
    assert second["exit_code"] == 4 and "maxCost" in second["error"] and second["turns"] == 0
    assert second["input_tokens"] == 0 and second["stop_reason"] == "budget"


def test_an_interrupted_turn_is_exit_130_and_a_second_ctrl_c_logs_the_last_one(agentic):
    agentic.code("slow", "import asyncio, pathlib\n"  # slow.started: the tool call is under way
                 "(pathlib.Path(str(ctx.globals.config.project)) / 'slow.started').touch()\n"
                 "await asyncio.sleep(30)\nreturn 'slept'")
    agentic.skill("talk", [{"text": "Ready.", "usage": {"inputTokens": 100, "outputTokens": 10}},
                           {"text": "Sleeping.", "code": "return await ctx.manager.invoke('slow', {})",
                            "usage": {"inputTokens": 200, "outputTokens": 20}},
                           {"text": "Back.", "usage": {"inputTokens": 300, "outputTokens": 30}},
                           {"text": "never", "delay": 30}], model={"id": SONNET, "snippetTimeout": 60})
    term = Terminal(agentic.project, "repl", "talk", "--task", "go")
    term.expect("Ready.")
    term.expect("> ")
    term.send("sleep please\n")
    term.expect("Sleeping.")
    wait_for(lambda: (agentic.project.root / "slow.started").exists())  # not a fixed 0.5 s: load
    term.send(CTRL_C)
    term.expect("turn cancelled")
    term.expect("> ")
    term.send("never mind\n")
    term.expect("Back.")
    term.expect("> ")
    term.send("think\n")
    wait_for(lambda: any("think" in r["input"] for r in agentic.requests()))  # the model call is in flight
    term.send(CTRL_C)
    term.expect("turn cancelled")
    time.sleep(0.3)
    term.send(CTRL_C)
    assert term.close(timeout=15) == 130, term.output
    ready, cancelled, back, last = oldest_first(agentic)
    assert (ready["exit_code"], ready["input_tokens"]) == (0, 100)
    assert cancelled["exit_code"] == 130 and "interrupted this turn" in cancelled["error"]
    assert (cancelled["input_tokens"], cancelled["turns"], cancelled["steps"]) == (200, 1, 1)
    assert cancelled["stop_reason"] == "interrupted"
    assert (back["exit_code"], back["input_tokens"], back["error"]) == (0, 300, None)
    assert (last["exit_code"], last["error"], last["input_tokens"]) == (130, "Interrupted.", 0)


def test_ctrl_d_at_the_prompt_writes_nothing_more_and_the_log_can_be_switched_off(talk):
    term = Terminal(talk.project, "repl", "talk", "--task", "hello")
    term.expect("One.")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    assert [r["input_tokens"] for r in oldest_first(talk)] == [1000]
    db(talk).unlink()
    assert talk.project.cli("repl", "talk", input="first\nsecond\n", AGENTAPPS_RUN_LOG="off").returncode == 0
    assert not db(talk).exists()


def test_a_message_is_kept_only_as_a_digest(talk):
    secret = "s3cr3t-repl-canary-77"
    result = talk.project.cli("repl", "talk", input=f"my token is {secret}\nagain\n")
    assert result.returncode == 0, result.stderr
    assert [r["exit_code"] for r in oldest_first(talk)] == [0, 0]
    stored = b"".join(p.read_bytes() for p in db(talk).parent.iterdir())
    assert secret.encode() not in stored and b"my token is" not in stored


# -- the worker --------------------------------------------------------------------------------


HANDLER = '''
import asyncio
import os

frontmatter = {"name": "job", "metadata": {"env": ["JOB_TOKEN"], "params": {"type": "object", "properties": {
    "event": {"type": "object"}}, "required": ["event"]}}}


async def run(ctx, args):
    if isinstance(args["event"]["data"], dict):
        with open(os.path.join(str(ctx.globals.config.project), "started.txt"), "a") as out:
            out.write(args["event"]["id"] + "\\n")
        await asyncio.sleep(args["event"]["data"]["sleep"])
    if args["event"]["data"] == "poison":
        raise RuntimeError("poison event")
    if args["event"]["data"] == "leak":
        raise RuntimeError("token is " + os.environ["JOB_TOKEN"])
    return await ctx.manager.invoke("think", {})
'''


@pytest.fixture
def jobs(redis_project, agentic):  # noqa: F811 - the fixture imported above
    agentic.skill("think", [{"text": "thought", "usage": {"inputTokens": 700, "outputTokens": 70}}],
                  model={"id": SONNET})
    redis_project.project.write("job.skill.py", HANDLER)
    return redis_project, agentic


def emit(rp: Any, items: list[Any]) -> None:
    from agentapps.events.streams import streams_for

    bus = streams_for(rp.project.boot().globals)
    for item in items:
        bus.emit("jobs", "job", item)


def test_each_event_a_worker_handles_is_a_record_with_its_own_spending(jobs):
    rp, agentic = jobs
    emit(rp, [1, 2, 3])
    result = rp.cli("worker", "jobs", "--group", "g", "--handler", "job", "--max-events", "3", "--concurrency", "2",
                    timeout=60)
    assert result.returncode == 0, result.stderr
    rows = oldest_first(agentic, "--skill", "job")
    assert len(rows) == 3 and {r["exit_code"] for r in rows} == {0}
    # each event's own agent run, not the worker's running sum
    assert {(r["input_tokens"], r["output_tokens"], r["turns"], r["model"]) for r in rows} == {(700, 70, 1, SONNET)}
    assert all(r["cost"] == pytest.approx(cost(700, 70)) and r["error"] is None for r in rows)
    assert len({r["args_digest"] for r in rows}) == 3
    [stats] = runs(agentic, "stats", "--skill", "job")["stats"]
    assert (stats["runs"], stats["input_tokens"]) == (3, 2100)


def test_a_failed_delivery_and_the_dead_letter_are_logged_with_their_error_line(jobs):
    rp, agentic = jobs
    emit(rp, ["poison", 1])
    result = rp.cli("worker", "jobs", "--group", "g", "--handler", "job", "--max-events", "3",
                    "--max-deliveries", "2", "-q", timeout=60)
    assert result.returncode == 0, result.stderr
    rows = oldest_first(agentic, "--skill", "job")
    assert sorted(r["exit_code"] for r in rows) == [0, 1, 1]
    failed = [r for r in rows if r["exit_code"] == 1]
    assert all("RuntimeError: poison event" in r["error"] and r["input_tokens"] == 0 for r in failed)
    assert "delivery 1 of 2; to be tried again" in failed[0]["error"]
    assert "delivery 2 of 2; moved to jobs.dead-letter" in failed[1]["error"]


def test_a_worker_writes_no_record_when_the_log_is_off(jobs):
    rp, agentic = jobs
    emit(rp, [1])
    result = rp.cli("worker", "jobs", "--group", "g", "--handler", "job", "--max-events", "1",
                    AGENTAPPS_RUN_LOG="off", timeout=60)
    assert result.returncode == 0, result.stderr
    assert not db(agentic).exists()


def test_the_worker_log_never_holds_a_declared_secret(jobs):
    rp, agentic = jobs
    secret = "s3cr3t-worker-canary-42"
    emit(rp, ["leak"])
    result = rp.cli("worker", "jobs", "--group", "g", "--handler", "job", "--max-events", "1", "-q",
                    JOB_TOKEN=secret, timeout=60)
    assert result.returncode == 0, result.stderr
    [row] = runs(agentic, "list")["runs"]
    assert row["exit_code"] == 1 and "token is [redacted:JOB_TOKEN]" in row["error"]
    stored = b"".join(p.read_bytes() for p in db(agentic).parent.iterdir())
    assert secret.encode() not in stored


def test_a_worker_stopped_by_sigterm_writes_the_records_of_the_events_it_finished(jobs):
    rp, agentic = jobs
    emit(rp, [{"sleep": 1.0}, {"sleep": 1.0}, 3])
    worker = subprocess.Popen([sys.executable, "-m", "agentapps", "worker", "jobs", "--group", "g", "--handler",
                               "job", "--concurrency", "2", "-q"], cwd=rp.root, env=rp.env(),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = rp.root / "started.txt"  # both slow events are in flight (not a fixed 0.7 s: load)
        wait_for(lambda: started.exists() and len(started.read_text().split()) == 2)
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=20)
    finally:
        worker.kill()
        worker.communicate()
    assert worker.returncode == 143, err
    rows = runs(agentic, "list", "--skill", "job")["runs"]
    assert [r["exit_code"] for r in rows] == [0, 0] and all(r["duration_ms"] >= 900 for r in rows)
