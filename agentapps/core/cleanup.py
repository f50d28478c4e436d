"""Async cleanups a run registers (MCP server sessions to close): run once, bounded, when it ends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

Cleanup = Callable[[], Awaitable[None]]
DEFAULT_TIMEOUT = 0.8  # inside the CLI's 1 s grace after Ctrl-C, so a clean close beats the hard kill


class Owner(Protocol):
    """What keeps a run's cleanups: a run's internals (`agentapps.runstate.Internals`)."""

    @property
    def cleanups(self) -> list[Cleanup]: ...


def register(internals: Owner, cleanup: Cleanup) -> None:
    internals.cleanups.append(cleanup)


async def run_cleanups(internals: Owner, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Await every registered cleanup (together, at most `timeout` seconds); never raises."""
    # emptied in place: a run a server serves holds the server's list (`Internals.served`)
    cleanups = internals.cleanups[:]
    internals.cleanups.clear()
    if not cleanups:
        return
    import asyncio  # there are cleanups: the run has a loop

    tasks = [asyncio.ensure_future(c()) for c in cleanups]
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            from agentapps.core.logs import logger

            logger("agentapps").debug("cleanup failed", exc_info=task.exception())
    if pending:
        await asyncio.wait(pending, timeout=0.2)
