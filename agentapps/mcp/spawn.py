"""Starting a stdio server process, with nothing but asyncio: the first call of a run starts its
server here before the MCP SDK is imported, so the server boots while the SDK loads."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import signal
from typing import TYPE_CHECKING

from agentapps.core.cleanup import register
from agentapps.files.sandboxing import for_run
from agentapps.mcp import config
from agentapps.mcp.slots import MCP_EARLY

if TYPE_CHECKING:
    from agentapps.context.context import Globals
    from agentapps.mcp.config import ServerSpec
    from agentapps.runstate import Internals

MAX_MESSAGE = 16 * 1024 * 1024  # the longest line (one JSON-RPC message) read from a server


async def spawn(spec: ServerSpec, g: Globals) -> asyncio.subprocess.Process:
    """The server process in its own process group (recorded so the CLI can kill it on any exit),
    inside the OS sandbox unless the main skill says `sandbox: off` (docs/sandbox.md): the network
    only when its declaration says `network: true`."""
    assert spec.command is not None
    internals = g.internals
    env = config.child_env(spec, internals)
    argv = [spec.command, *spec.args]
    sandbox = await for_run(g, spec.network, spec.cwd)
    if sandbox is not None:
        _must_exist(spec.command, spec.cwd, env.get("PATH"))  # bwrap would start, then fail to exec it
        argv = sandbox.wrap(argv, cwd=spec.cwd or sandbox.root, env=env)  # bwrap looks the program up on PATH
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=spec.cwd, start_new_session=True, limit=MAX_MESSAGE)
    internals.children.add(proc.pid)
    return proc


def _must_exist(command: str, cwd: str | None, path: str | None) -> None:
    """FileNotFoundError, as starting it bare would raise, when `command` names no program."""
    found = (os.access(os.path.join(cwd or os.getcwd(), command), os.X_OK) if os.sep in command
             else shutil.which(command, path=path) is not None)
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


async def start_early(g: Globals, prefix: str) -> None:
    """Start the server of a first call now; its session adopts the process (agentapps/mcp/stdio.py)."""
    from agentapps.mcp.registry import registry_for

    server = registry_for(g).servers.get(prefix)
    early = g.internals.get(MCP_EARLY)
    if server is None or server.spec is None or server.spec.url or prefix in early:
        return
    try:
        early[prefix] = await spawn(server.spec, g)
    except Exception:  # noqa: BLE001 - the session's own start reports it properly
        return
    if len(early) == 1:
        register(g.internals, lambda: _drop_unused(g.internals))


async def _drop_unused(internals: Internals) -> None:
    """Processes whose session never started (the call was denied first): stopped at the end."""
    early = internals.get(MCP_EARLY)
    internals.set(MCP_EARLY, {})
    for proc in early.values():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 1.0)
        internals.children.discard(proc.pid)
