"""The stdio transport to a server process. Ours rather than the SDK's, so that we hold the
process group (the CLI kills it on every way out), keep the server's stderr out of our output
(its last lines explain a crash), bound message size, and stop a server within about a second."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from agentapps.mcp.spawn import MAX_MESSAGE

STDERR_LINES = 20
EXIT_GRACE = 0.4  # after stdin closes, before SIGTERM; then as long again before SIGKILL


@dataclass
class ProcessInfo:
    """What the connection may tell the user about its server process."""

    pid: int | None = None
    returncode: int | None = None
    problem: str | None = None  # why we stopped reading (an oversized or broken message)
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_LINES))
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # stdout ended: the server is gone

    def last_words(self) -> str:
        """The last line it wrote to stderr that says something: a Python server on asyncio or anyio
        dies with an exception group, whose traceback ends in the edge of a box (`+-----`) and
        draws `| ` before each of its lines."""
        for line in reversed(self.stderr):
            said = line.strip().lstrip("|+ ").strip()
            if any(c.isalnum() for c in said):
                return said[:300]
        return ""


async def _read(proc: asyncio.subprocess.Process, out: Any, info: ProcessInfo) -> None:
    assert proc.stdout is not None
    try:
        while True:
            try:
                line = await proc.stdout.readline()
            except ValueError:  # the line outgrew the reader's limit
                info.problem = f"sent a message over {MAX_MESSAGE // (1024 * 1024)} MiB"
                return
            if not line:
                return
            if not line.strip():
                continue
            try:
                message: Any = SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except ValueError as exc:  # pydantic's ValidationError is one
                message = exc
            await out.send(message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        info.closed.set()
        await out.aclose()


async def _write(proc: asyncio.subprocess.Process, source: Any) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError, anyio.ClosedResourceError, anyio.EndOfStream):
        async for message in source:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            proc.stdin.write(data.encode())
            await proc.stdin.drain()


async def _stderr(proc: asyncio.subprocess.Process, info: ProcessInfo) -> None:
    assert proc.stderr is not None
    with contextlib.suppress(OSError, ValueError):
        while line := await proc.stderr.readline():
            info.stderr.append(line.decode(errors="replace").rstrip()[:500])


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _exited(proc: asyncio.subprocess.Process, seconds: float) -> bool:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(proc.wait()), seconds)
    return proc.returncode is not None


async def stop(proc: asyncio.subprocess.Process) -> None:
    """Close stdin, wait a little, SIGTERM the group, then SIGKILL it (grandchildren included)."""
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    if proc.returncode is None and not await _exited(proc, EXIT_GRACE):
        kill_group(proc.pid, signal.SIGTERM)
        if not await _exited(proc, EXIT_GRACE):
            kill_group(proc.pid)
            await _exited(proc, 1.0)
    kill_group(proc.pid)  # whatever the server left running in its group


@contextlib.asynccontextmanager
async def stdio_transport(start: Callable[[], Awaitable[asyncio.subprocess.Process]], info: ProcessInfo,
                          children: set[int]) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server (`start` spawns it, registered in `children`); yield (read, write) streams
    of SessionMessages; stop it on exit."""
    proc = await start()
    info.pid = proc.pid
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)
    tasks = [asyncio.ensure_future(_read(proc, read_send, info)), asyncio.ensure_future(_write(proc, write_recv)),
             asyncio.ensure_future(_stderr(proc, info))]
    try:
        yield read_recv, write_send
    finally:
        try:
            await stop(proc)
        except BaseException:
            kill_group(proc.pid)  # cancelled while stopping it: no second chance to be polite
            raise
        finally:
            info.returncode = proc.returncode
            children.discard(proc.pid)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for stream in (write_send, write_recv, read_send, read_recv):
                stream.close()
