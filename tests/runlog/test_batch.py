"""The batched run-log writer of long-lived processes (serve, worker, mcp-server): every record
added is written, including one added while or after the process closes its writer."""

from __future__ import annotations

import asyncio
import sqlite3
import time

from agentapps.runlog import entry_for
from agentapps.runlog.batch import Batcher
from agentapps.runstate import Internals


def record(skill: str) -> dict:
    return entry_for(skill=skill, args={}, internals=Internals(), exit_code=0, error=None, started=time.perf_counter())


def skills_logged(data_dir) -> list[str]:
    conn = sqlite3.connect(data_dir / "runs" / "runs.db")
    try:
        return [row[0] for row in conn.execute("SELECT skill FROM runs ORDER BY id")]
    finally:
        conn.close()


def test_records_added_before_during_and_after_close_are_all_written(tmp_path):
    data_dir = tmp_path / ".agent-apps"

    async def scenario() -> None:
        batcher = Batcher(data_dir)
        batcher.add(record("before"))
        closing = asyncio.ensure_future(batcher.close())
        await asyncio.sleep(0)
        batcher.add(record("during"))  # a run that ended while the shutdown waited for the writer
        await closing
        batcher.add(record("after"))  # a run cancelled by the shutdown, ending after the cleanups

    asyncio.run(scenario())
    assert sorted(skills_logged(data_dir)) == ["after", "before", "during"]


def test_a_close_cut_short_by_the_cleanup_limit_still_writes_what_was_pending(tmp_path):
    # serve, worker and mcp-server close the writer among cleanups bounded to under a second; when
    # the bound cut the close while the writer waited to gather a batch, the loop's end then
    # cancelled the writer and the records of runs that had finished were gone
    data_dir = tmp_path / ".agent-apps"

    async def scenario() -> None:
        batcher = Batcher(data_dir)
        batcher.add(record("finished"))
        closing = asyncio.ensure_future(batcher.close())
        await asyncio.sleep(0)
        closing.cancel()

    asyncio.run(scenario())
    assert skills_logged(data_dir) == ["finished"]


def test_records_of_a_loop_that_ends_without_a_close_are_written(tmp_path):
    data_dir = tmp_path / ".agent-apps"

    async def scenario() -> None:
        Batcher(data_dir).add(record("orphan"))  # the writer task is cancelled when asyncio.run ends

    asyncio.run(scenario())
    assert skills_logged(data_dir) == ["orphan"]


LATE = """
import asyncio, sys, time
from pathlib import Path
from agentapps.runstate import Internals
from agentapps.runlog import entry_for
from agentapps.runlog.batch import Batcher

async def scenario():
    async def late():
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:  # a run ending as asyncio.run cancels what is left
            entry = entry_for(skill="late", args={}, internals=Internals(), exit_code=0, error=None,
                              started=time.perf_counter())
            Batcher(Path(sys.argv[1])).add(entry)  # its writer task is cancelled before it ever runs
            raise
    asyncio.ensure_future(late())
    await asyncio.sleep(0)

asyncio.run(scenario())
"""


def test_a_record_added_while_the_loop_ends_is_written_when_the_process_exits(tmp_path):
    import subprocess
    import sys

    data_dir = tmp_path / ".agent-apps"
    done = subprocess.run([sys.executable, "-c", LATE, str(data_dir)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert skills_logged(data_dir) == ["late"]


def test_a_log_moved_away_between_batches_is_started_afresh(tmp_path):
    # the batcher keeps its connection between batches: one to a file moved away (or deleted) would
    # go on writing where nobody reads, so each batch checks the file is still the one it opened
    data_dir = tmp_path / ".agent-apps"
    log = data_dir / "runs" / "runs.db"

    async def scenario() -> None:
        batcher = Batcher(data_dir)
        batcher.add(record("first"))
        while batcher.pending or not log.exists():
            await asyncio.sleep(0.01)
        for suffix in ("", "-wal", "-shm"):  # moved away as a user would, with its WAL
            moved = log.with_name(log.name + suffix)
            if moved.exists():
                moved.rename(tmp_path / ("old.db" + suffix))
        batcher.add(record("second"))
        await batcher.close()

    asyncio.run(scenario())
    assert skills_logged(data_dir) == ["second"]
    conn = sqlite3.connect(tmp_path / "old.db")
    try:
        assert [row[0] for row in conn.execute("SELECT skill FROM runs")] == ["first"]
    finally:
        conn.close()


def test_a_batch_s_records_take_the_ids_after_the_last_ones_and_keep_their_model_usage(tmp_path):
    # a batch of runs that used no model is written with one statement; their ids are still theirs
    from agentapps.runlog import log_entries

    data_dir = tmp_path / ".agent-apps"
    priced = {**record("priced"), "models": [{"model": "m", "inputTokens": 7, "outputTokens": 2, "cost": 0.5}]}
    assert log_entries(data_dir, [record("a")]) == [1]
    assert log_entries(data_dir, [record("b"), record("c"), record("d")]) == [2, 3, 4]
    assert log_entries(data_dir, [record("e"), priced, record("f")]) == [5, 6, 7]
    assert log_entries(data_dir, [record("g"), record("h")]) == [8, 9]
    assert skills_logged(data_dir) == ["a", "b", "c", "d", "e", "priced", "f", "g", "h"]
    conn = sqlite3.connect(data_dir / "runs" / "runs.db")
    try:
        models = conn.execute("SELECT run_id, model, input_tokens, output_tokens, cost FROM run_models").fetchall()
        counts = conn.execute("SELECT turns, input_tokens, exit_code FROM runs WHERE id = 3").fetchone()
    finally:
        conn.close()
    assert models == [(6, "m", 7, 2, 0.5)]
    assert counts == (0, 0, 0)
