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


def test_a_batch_gets_the_ids_sqlite_would_give_and_each_run_keeps_its_own_models(tmp_path):
    from agentapps.runlog.store import ROWS_PER_INSERT, Writer

    path = tmp_path / "runs" / "runs.db"
    writer = Writer(path)
    try:
        assert writer.append([record("first")]) == [1]
        spent = {"models": {"m-a": {"inputTokens": 5, "outputTokens": 7, "cost": 0.5}}, "turns": 1,
                 "usage": {"inputTokens": 5, "outputTokens": 7}}
        entries = []
        for i in range(2 * ROWS_PER_INSERT + 3):  # more than one INSERT's worth
            entry = entry_for(skill=f"s{i}", args={"i": i}, internals=Internals(), exit_code=i % 3, error=None,
                              started=time.perf_counter(), totals=spent if i % 10 == 0 else None)
            entries.append(entry)
        ids = writer.append(entries)
        conn = sqlite3.connect(path)
        conn.execute("DELETE FROM runs WHERE id = ?", [ids[-1]])  # the newest gone: its id is given again
        conn.commit()
        again = writer.append([record("again")])
    finally:
        writer.close()
    assert ids == list(range(2, 2 + len(entries))) and again == [ids[-1]]
    rows = {r[0]: r[1:] for r in conn.execute("SELECT id, skill, exit_code, model, input_tokens, turns FROM runs")}
    models = {r[0]: r[1:] for r in conn.execute("SELECT run_id, model, input_tokens, output_tokens, cost "
                                                "FROM run_models")}
    conn.close()
    for i, run_id in enumerate(ids[:-1]):
        agent = i % 10 == 0
        assert rows[run_id] == (f"s{i}", i % 3, "m-a" if agent else None, 5 if agent else 0, 1 if agent else 0)
        assert models.get(run_id) == (("m-a", 5, 7, 0.5) if agent else None)
    assert rows[again[0]][0] == "again" and again[0] not in models


def test_ids_past_the_largest_sqlite_holds_are_left_to_sqlite(tmp_path):
    from agentapps.runlog.store import MAX_ID, Writer

    path = tmp_path / "runs" / "runs.db"
    writer = Writer(path)
    try:
        writer.append([record("first")])
        conn = sqlite3.connect(path)
        conn.execute("UPDATE runs SET id = ? WHERE id = 1", [MAX_ID - 1])
        conn.commit()
        ids = writer.append([record("a"), record("b"), record("c")])  # two would not fit above it
    finally:
        writer.close()
    skills = dict(conn.execute("SELECT id, skill FROM runs"))
    conn.close()
    assert len(set(ids)) == 3 and [skills[i] for i in ids] == ["a", "b", "c"]


def _rows(data_dir) -> int:
    path = data_dir / "runs" / "runs.db"
    if not path.exists():
        return 0
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # no table yet
        return 0
    finally:
        conn.close()


def test_a_big_batch_is_written_in_slices_with_the_loop_free_between_them(tmp_path):
    from agentapps.runlog.batch import SLICE

    data_dir = tmp_path / ".agent-apps"
    seen: list[int] = []

    async def scenario() -> None:
        batcher = Batcher(data_dir)
        for i in range(3 * SLICE + 5):
            batcher.add(record(f"r{i}"))
        assert batcher.writer is not None
        while not batcher.writer.done():  # what another request sees of the log, between slices
            seen.append(_rows(data_dir))
            await asyncio.sleep(0)
        await batcher.close()

    asyncio.run(scenario())
    assert [n for n in sorted(set(seen)) if n] == [SLICE, 2 * SLICE, 3 * SLICE]
    assert skills_logged(data_dir) == [f"r{i}" for i in range(3 * SLICE + 5)]


def test_a_writer_cancelled_between_slices_still_writes_the_rest(tmp_path):
    from agentapps.runlog.batch import SLICE

    data_dir = tmp_path / ".agent-apps"

    async def scenario() -> None:
        batcher = Batcher(data_dir)
        for i in range(3 * SLICE):
            batcher.add(record(f"r{i}"))
        assert batcher.writer is not None
        while _rows(data_dir) < SLICE:
            await asyncio.sleep(0)
        batcher.writer.cancel()  # the loop ending, say
        await asyncio.gather(batcher.writer, return_exceptions=True)

    asyncio.run(scenario())
    assert skills_logged(data_dir) == [f"r{i}" for i in range(3 * SLICE)]
