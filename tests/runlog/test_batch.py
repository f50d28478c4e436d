"""The batched run-log writer of long-lived processes (serve, worker, mcp-server): every record
added is written, including one added while or after the process closes its writer."""

from __future__ import annotations

import asyncio
import sqlite3
import time

from agentapps.context.context import Internals
from agentapps.runlog import entry_for
from agentapps.runlog.batch import Batcher


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
