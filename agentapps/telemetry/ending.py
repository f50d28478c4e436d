"""The end of a process's traces: what has ended is exported, in bounded time, never failing a run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.telemetry.slots import TRACING

if TYPE_CHECKING:
    from agentapps.runstate import Internals
    from agentapps.telemetry.calls import Call


def close(internals: Internals) -> None:
    """At the end of a CLI run and at a server's stop: flush the spans (a few seconds at most) and
    stop the exporter. Traces off: nothing (and nothing imported)."""
    tracing = internals.get(TRACING)
    if tracing is not None:
        tracing.close()


async def aclose(internals: Internals) -> None:
    """`close` for a process that serves on an event loop: the flush waits on a thread, not the loop."""
    if internals.get(TRACING) is not None:
        import asyncio

        await asyncio.to_thread(close, internals)


def traceparent(ctx: Call) -> str | None:
    """The W3C `traceparent` header of the call `ctx`, for a request it makes; None when traces are off."""
    tracing = ctx.globals.internals.get(TRACING)
    return None if tracing is None else tracing.traceparent(ctx)
