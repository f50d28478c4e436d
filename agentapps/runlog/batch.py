"""Run-log records written in the background, in batches, by processes that serve many runs.

A record costs about a millisecond to write (one SQLite transaction with fsync). `agentapps worker`
and `agentapps mcp-server` must not make each event or tool call wait for it, so a `Batcher` keeps
the records of the runs that ended and one writer task appends them together, on the loop itself,
every `BATCH_SECONDS` at most, in transactions of at most `SLICE` records with the loop free between
them, over one connection kept between batches (`store.Writer`); `close()` writes what is still
pending. The price: a process killed with SIGKILL loses at most the last batch's records (the log
itself is never damaged: each transaction is all or nothing).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.runlog.slots import RUN_LOG

if TYPE_CHECKING:
    from agentapps.runlog.store import Writer
    from agentapps.runstate import Internals

BATCH_SECONDS = 0.05  # how long a record may wait to be written with the next ones
SLICE = 64  # records written in one go (one transaction, about a quarter of a millisecond)


class Batcher:
    """Records made by `entry_for`, appended by one writer task in batches."""

    def __init__(self, data_dir: Path | None) -> None:
        import atexit

        self.data_dir = data_dir
        self.store: Writer | None = None  # its connection, kept between batches
        self.pending: list[dict[str, Any]] = []
        self.writer: asyncio.Future[None] | None = None
        self.closed = False
        # the last resort: a record added as the loop was ending (a run finishing while asyncio.run
        # cancels what is left) can have a writer task that is cancelled before it ever runs
        atexit.register(self._write_pending)

    def add(self, entry: dict[str, Any]) -> None:
        """Queue a record; the writer task starts if it is not running (call on the loop). Once
        closed (the process is stopping), a record is written at once: a run that ends during the
        shutdown (cancelled by it, say) would otherwise leave it to a task nobody waits for."""
        if self.closed:
            self._write_pending([entry])
            return
        self.pending.append(entry)
        if self.writer is None or self.writer.done():
            self.writer = asyncio.ensure_future(self._write())

    def _write_pending(self, extra: list[dict[str, Any]] | None = None) -> None:
        """Write what is pending now, on this thread (a shutdown; never raises: one warning)."""
        from agentapps.runlog import log_entries

        batch, self.pending = [*self.pending, *(extra or [])], []
        if batch:
            log_entries(self.data_dir, batch, writer=self._writer())
        if self.closed and self.store is not None:
            self.store.close()
            self.store = None  # a record added after the close is written with a connection of its own

    def _writer(self) -> Writer | None:
        if self.store is None and self.data_dir is not None and not self.closed:
            from agentapps.runlog import log_path
            from agentapps.runlog.store import Writer

            self.store = Writer(log_path(self.data_dir))
        return self.store

    async def _write(self) -> None:
        from agentapps.runlog import log_entries

        try:
            while self.pending:
                await asyncio.sleep(BATCH_SECONDS)  # gather the records of the runs ending meanwhile
                # on the loop, not in a worker thread: a batch handed to the executor could wait
                # behind blocked threads and be dropped when the process stops. One transaction per
                # SLICE records, the loop free between them: a busy server's 250 records of 50 ms
                # in one transaction held every request waiting for about a millisecond.
                for _ in range(-(-len(self.pending) // SLICE)):
                    batch, self.pending = self.pending[:SLICE], self.pending[SLICE:]
                    log_entries(self.data_dir, batch, writer=self._writer())  # never raises: one warning
                    if self.pending:
                        await asyncio.sleep(0)
        except asyncio.CancelledError:
            self._write_pending()  # the loop is ending (no close, or a close cut short): nothing is lost
            raise

    async def close(self) -> None:
        """Write the records still pending (the process is stopping); later ones are written as
        they come. The pending ones are written before the first await, so a close that is cut
        short (the cleanups' time limit) loses none of them."""
        self.closed = True
        self._write_pending()
        if self.writer is not None and not self.writer.done():
            self.writer.cancel()  # it waits only to gather more: nothing is left for it to write


def batcher_for(internals: Internals, log_dir: Path) -> Batcher:
    """The process's batcher (`internals`: a server's own), writing under `log_dir` and closed with
    the process's cleanups."""
    found = internals.get(RUN_LOG)
    if found is None:
        found = Batcher(log_dir)
        internals.set(RUN_LOG, found)
        internals.cleanups.append(found.close)
    return found
