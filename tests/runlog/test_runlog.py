"""The run log: every `agentapps run` lands in .agent-apps/runs/runs.db, whatever the outcome;
`agentapps runs list|show|stats` read it; concurrency, kill -9, secrets, switching it off."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentapps.runlog import entry_for
from agentapps.runlog.store import append
from agentapps.runstate import Internals
from tests.support import cli
from tests.support.waiting import wait_for

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TURNS = [{"code": "return 1", "usage": {"inputTokens": 1000, "outputTokens": 100}},
         {"text": "Done.", "usage": {"inputTokens": 1200, "outputTokens": 50, "cacheReadInputTokens": 400}}]
COST = (2200 * 3 + 150 * 15 + 400 * 0.3) / 1e6


def runs(agentic, *argv: str) -> Any:
    result = agentic.project.cli("runs", *argv, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def db(agentic) -> Path:
    return agentic.project.root / ".agent-apps" / "runs" / "runs.db"


@pytest.fixture
def agent_skill(agentic) -> str:
    agentic.skill("chat", TURNS, model={"id": SONNET},
                  params={"type": "object", "properties": {"sessionId": {"type": "string"}}},
                  meta={"session": {"key": "args.sessionId", "store": "file"}})
    return "chat"


def test_every_outcome_lands_with_what_the_run_did(agentic, agent_skill):
    agentic.code("fail", "raise ValueError('nope')\nreturn None")
    assert agentic.run("hello", "--name", "Ada").returncode == 0
    assert agentic.run("hello", "--nmae", "Ada").returncode == 2
    assert agentic.run("fail").returncode == 1
    assert agentic.run("chat", "--session-id", "s-42").returncode == 0
    listed = runs(agentic, "list")["runs"]
    assert [(r["skill"], r["exit_code"]) for r in listed] == [("chat", 0), ("fail", 1), ("hello", 2), ("hello", 0)]
    chat, fail, typo, hello = listed
    assert "Did you mean --name?" in typo["error"] and "ValueError: nope" in fail["error"]
    assert hello["error"] is None and hello["model"] is None and hello["duration_ms"] > 0
    shown = runs(agentic, "show", str(chat["id"]))
    assert shown["model"] == SONNET and shown["turns"] == 2 and shown["steps"] == 1
    assert (shown["input_tokens"], shown["output_tokens"], shown["cache_read_tokens"]) == (2200, 150, 400)
    assert shown["cost"] == pytest.approx(COST) and shown["session_id"] == "s-42"
    assert shown["stop_reason"] == "answered" and shown["args_digest"].startswith("sha256:")
    assert shown["models"] == [{"model": SONNET, "input_tokens": 2200, "output_tokens": 150,
                                "cache_read_tokens": 400, "cache_write_tokens": 0, "cost": pytest.approx(COST)}]
    assert "sessionId" not in json.dumps(shown)  # args only as a digest


def test_list_filters_by_skill_and_period_and_stats_sum_per_skill_and_model(agentic, agent_skill):
    for _ in range(2):
        assert agentic.run("chat").returncode == 0
    assert agentic.run("hello").returncode == 0
    assert [r["skill"] for r in runs(agentic, "list", "--skill", "chat")["runs"]] == ["chat", "chat"]
    assert len(runs(agentic, "list", "--since", "1h")["runs"]) == 3
    assert runs(agentic, "list", "--since", "2999-01-01")["runs"] == []
    stats = {(s["skill"], s["model"]): s for s in runs(agentic, "stats", "--since", "7d")["stats"]}
    assert stats[("chat", SONNET)]["runs"] == 2 and stats[("chat", SONNET)]["input_tokens"] == 4400
    assert stats[("chat", SONNET)]["cost"] == pytest.approx(2 * COST)
    assert stats[("hello", None)]["runs"] == 1 and stats[("hello", None)]["cost"] is None
    text = agentic.project.cli("runs", "list").stdout.splitlines()
    assert text[0].split() == ["ID", "STARTED", "SKILL", "MODEL", "EXIT", "TURNS", "TOKENS", "COST", "TIME"]
    assert f"${COST:.4f}" in text[2] and "chat" in text[2] and " - " in text[1]


@pytest.mark.parametrize("argv, says", [
    (("list", "--since", "yesterday"), "--since expects"),
    (("show", "99"), "No run 99"),
    # an id beyond SQLite's integers, or made of digits int() does not read, is bad input, not a crash
    (("show", "99999999999999999999999"), "No run 99999999999999999999999"),
    (("resume", "99999999999999999999999"), "--resume expects a run id"),
    (("resume", "\u00b2"), "--resume expects a run id"),
])
def test_bad_queries_are_bad_input(agentic, argv, says):
    assert agentic.run("hello").returncode == 0
    result = agentic.project.cli("runs", *argv)
    assert result.returncode == 2 and says in result.stderr


@pytest.mark.slow
def test_eight_concurrent_runs_all_land(agentic, agent_skill):
    procs = [subprocess.Popen([sys.executable, "-m", "agentapps", "run", "chat", "--session-id", f"c{n}"],
                              cwd=agentic.project.root, env=agentic.project.env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for n in range(8)]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    listed = runs(agentic, "list")["runs"]
    assert len(listed) == 8 and len({r["id"] for r in listed}) == 8
    assert sorted(r["session_id"] for r in listed) == [f"c{n}" for n in range(8)]
    (total,) = runs(agentic, "stats")["stats"]
    assert total["runs"] == 8 and total["input_tokens"] == 8 * 2200


WRITER = """
import sys, time
from pathlib import Path
from agentapps.runlog.store import append
entry = {"started_at": time.time(), "skill": "w", "exit_code": 0, "models": [{"model": "m", "inputTokens": 1}]}
while True:
    append(Path(sys.argv[1]), entry)
"""


@pytest.mark.slow
def test_a_writer_killed_mid_write_never_damages_the_log(agentic):
    path = db(agentic)
    rng = random.Random(12)
    for _ in range(12):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=agentic.project.env())
        time.sleep(rng.uniform(0.15, 0.4))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    written = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    # every run row has its model row: nothing half-written
    assert conn.execute("SELECT COUNT(*) FROM run_models").fetchone()[0] == written > 0
    conn.close()
    assert agentic.run("hello").returncode == 0
    assert runs(agentic, "list", "--skill", "hello")["runs"][0]["exit_code"] == 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupted_run_is_logged_with_its_exit_code(agentic):
    agentic.code("slow", "import asyncio, pathlib\npathlib.Path('sleeping').touch()\nawait asyncio.sleep(30)\nreturn 1")
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "slow"], cwd=agentic.project.root,
                            env=agentic.project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: (agentic.project.root / "sleeping").exists(), what="the run to start")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=10)
    assert proc.returncode == 143
    (row,) = runs(agentic, "list")["runs"]
    assert row["skill"] == "slow" and row["exit_code"] == 143 and row["error"] == "Terminated."


def test_the_log_never_holds_a_declared_secret(agentic):
    secret = "s3cr3t-canary-value-9f"
    agentic.code("leak", "import os\nraise RuntimeError('token is ' + os.environ['CANARY_TOKEN'])",
                 params={"type": "object", "properties": {"token": {"type": "string"}}},
                 meta={"env": ["CANARY_TOKEN"]})
    result = agentic.run("leak", "--token", secret, CANARY_TOKEN=secret)
    assert result.returncode == 1
    (row,) = runs(agentic, "list")["runs"]
    assert row["error"].endswith("token is [redacted:CANARY_TOKEN]")
    stored = b"".join(p.read_bytes() for p in db(agentic).parent.iterdir())
    assert secret.encode() not in stored


def test_it_can_be_switched_off(agentic):
    assert agentic.run("hello", AGENTAPPS_RUN_LOG="off").returncode == 0
    assert not db(agentic).exists()


def test_a_damaged_log_is_reported_never_replaced_and_never_fails_a_run(agentic):
    path = db(agentic)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    result = agentic.run("hello", "--name", "Ada")
    assert result.returncode == 0 and result.stdout == "Hello, Ada!\n"
    assert "warning: the run was not added to the run log" in result.stderr and "move it away" in result.stderr
    listed = agentic.project.cli("runs", "list")
    assert listed.returncode == 1 and "is damaged" in listed.stderr and "Traceback" not in listed.stderr
    assert path.read_bytes() == b"this is not a database" * 100


def test_files_are_private(agentic):
    assert agentic.run("hello").returncode == 0
    assert db(agentic).stat().st_mode & 0o777 == 0o600
    assert db(agentic).parent.stat().st_mode & 0o777 == 0o700


def test_a_record_holds_a_digest_of_the_args_not_the_args(project):
    first = entry_for(skill="s", args={"b": 1, "a": "x"}, internals=Internals(), exit_code=0, error=None,
                      started=time.perf_counter())
    again = entry_for(skill="s", args={"a": "x", "b": 1}, internals=Internals(), exit_code=0, error=None,
                      started=time.perf_counter())
    other = entry_for(skill="s", args={"a": "y", "b": 1}, internals=Internals(), exit_code=0, error=None,
                      started=time.perf_counter())
    assert first["args_digest"] == again["args_digest"] != other["args_digest"]
    path = project.root / ".agent-apps" / "runs" / "runs.db"
    assert append(path, first) == 1 and append(path, other) == 2
    assert b'"x"' not in path.read_bytes() and os.path.getsize(path) > 0


def test_a_run_outside_any_project_leaves_no_folder_where_it_ran(tmp_path):
    home, here = tmp_path / "home", tmp_path / "somewhere"
    home.mkdir()
    here.mkdir()
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("AGENTAPPS_")}
    env.update(HOME=str(home))
    result = cli.in_process(["run", "hello", "--name", "x"], cwd=here, env=env, input=None)
    assert result.returncode == 0, result.stderr
    assert list(here.iterdir()) == []  # the run log went to the user's folder
    assert (home / ".agent-apps" / "runs" / "runs.db").exists()


def test_a_run_that_fails_before_it_starts_outside_any_project_leaves_no_folder_either(tmp_path):
    """A missing --replay file fails before bootstrap: its record still goes to the user's folder."""
    home, here = tmp_path / "home", tmp_path / "somewhere"
    home.mkdir()
    here.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTAPPS_")}
    env.update(HOME=str(home))
    result = cli.in_process(["run", "--replay", "nope.json", "hello"], cwd=here, env=env, input=None)
    assert result.returncode == 2 and "Cannot read the script" in result.stderr, result.stderr
    assert list(here.iterdir()) == []
    conn = sqlite3.connect(home / ".agent-apps" / "runs" / "runs.db")
    assert conn.execute("SELECT skill, exit_code FROM runs").fetchall() == [("hello", 2)]
    conn.close()


def test_text_that_is_not_utf8_never_loses_records(project):
    # a command-line argument that is not UTF-8 arrives as a lone surrogate, and so does a JSON
    # "\\udcff" escape in an event's payload; one in an error line failed the whole batch's insert
    from agentapps.lifecycle.failure import record
    from agentapps.runlog import log_entries

    started = time.perf_counter()
    plain = entry_for(skill="s", args={"a": "x"}, internals=Internals(), exit_code=0, error=None, started=started)
    odd = entry_for(skill="s\udcff", args={"title": "\udcff"}, internals=Internals(), exit_code=1,
                    error=record(ValueError("bad title \udcff")), started=started)
    other = entry_for(skill="s", args={"title": "\udcfe"}, internals=Internals(), exit_code=0, error=None,
                      started=started)
    assert odd["args_digest"] != other["args_digest"]  # still tells the args apart
    assert log_entries(project.root / ".agent-apps", [plain, odd, plain]) == [1, 2, 3]
    conn = sqlite3.connect(project.root / ".agent-apps" / "runs" / "runs.db")
    rows = conn.execute("SELECT skill, error FROM runs ORDER BY id").fetchall()
    conn.close()  # Python 3.13 warns of an unclosed connection in whichever later test collects it
    assert rows[1] == ("s\ufffd", "internal error: ValueError: bad title \ufffd")
    result = project.cli("run", "hello", "--name", os.fsdecode(b"\xff\xfe"))
    assert result.returncode == 0 and "run log" not in result.stderr, result.stderr
    listed = project.cli("runs", "list", "--json").stdout
    assert listed.count('"hello"') == 1, listed


@pytest.mark.parametrize("args", [
    {}, {"text": "x"}, {"b": [1, 2.5, None, True, {"z": "é", "a": "\udcff"}], "a": -0.0}, "text", 3.25,
    {"when": __import__("datetime").date(2026, 11, 28)},  # not JSON: as its str()
])
def test_the_args_digest_is_sha256_of_their_canonical_json(args):
    from agentapps.runlog import args_digest

    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert args_digest(args) == "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def test_args_with_a_cycle_make_no_record_but_the_next_args_still_do():
    from agentapps.runlog import args_digest

    looped: dict = {"a": 1}
    looped["self"] = looped
    with pytest.raises((ValueError, RecursionError)):
        args_digest(looped)
    assert args_digest({"a": 1}) == args_digest({"a": 1}) != args_digest({"a": 2})
