"""Running a command for the `shell` skill: minimal environment, timeout, output caps, tree kill.

The command runs under `reaper.py`, a small subreaper process, so descendants that leave the
process group (`setsid`, daemons) are still found and killed when the command ends or is stopped.
Given a `Sandbox`, the reaper starts bwrap, which runs the command in its own namespaces
(`sandbox.py`): the reaper stays outside, out of the command's sight and reach.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentapps.errors import LimitError
from agentapps.process import reaper
from agentapps.process.command import SHELL
from agentapps.process.sandbox import Sandbox

BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TERM")
MAX_OUTPUT = 1024 * 1024
STOP_GRACE = 2.0  # seconds the reaper gets to kill the command's tree before its group is SIGKILLed


@dataclass
class ShellResult:
    """What a shell command did: its exit code and output."""

    exit_code: int
    stdout: str
    stderr: str
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "stdout": self.stdout, "stderr": self.stderr, "truncated": self.truncated}


def minimal_env(declared: list[str]) -> dict[str, str]:
    """PATH, HOME, LANG and friends, plus exactly the variables the calling skill declares."""
    names = [*BASE_ENV, *declared]
    return {name: os.environ[name] for name in names if name in os.environ}


async def _read_capped(stream: asyncio.StreamReader | None, limit: int) -> tuple[bytes, bool]:
    data = bytearray()
    truncated = False
    if stream is None:
        return b"", False
    while chunk := await stream.read(65536):
        room = limit - len(data)
        if room > 0:
            data += chunk[:room]
        if len(chunk) > room:
            truncated = True  # keep draining so the child never blocks on a full pipe
    return bytes(data), truncated


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    """Write stdin; a command that exits without reading it all is not an error."""
    if stream is None:
        return
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stream.close()


def _signal(pid: int, signum: int, *, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Ask the reaper to kill the command's whole tree; SIGKILL its group if it does not exit."""
    _signal(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), STOP_GRACE)
    except TimeoutError:
        pass
    _signal(proc.pid, signal.SIGKILL, group=True)
    await proc.wait()


async def run_command(
    line: str, *, cwd: Path, env: dict[str, str], timeout: float, stdin: str | None = None,
    max_output: int = MAX_OUTPUT, children: set[int] | None = None, sandbox: Sandbox | None = None,
) -> ShellResult:
    """Run `/bin/sh -c line` (inside `sandbox` when given). `children` collects live process-group
    ids so an interrupted CLI can kill them as it exits."""
    program = [SHELL, "-c", line]
    if sandbox is not None:
        program = sandbox.wrap(program, cwd=str(cwd), env=env)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", reaper.__file__, str(os.getpid()), *program,
        cwd=str(cwd), env=env, start_new_session=True,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    if children is not None:
        children.add(proc.pid)
    try:
        gathered = asyncio.gather(
            _read_capped(proc.stdout, max_output), _read_capped(proc.stderr, max_output), proc.wait(),
            _feed(proc.stdin, stdin.encode() if stdin is not None else b""),
        )
        # on cancellation nobody awaits the gather again: consume its outcome so asyncio stays quiet
        gathered.add_done_callback(lambda f: f.cancelled() or f.exception())
        try:
            (out, t1), (err, t2), code, _ = await asyncio.wait_for(gathered, timeout)
        except TimeoutError:
            raise LimitError(f"shell: {line[:120]} ran longer than {timeout:g} s and was killed.") from None
    finally:
        if proc.returncode is None:
            await _stop(proc)  # timeout, Ctrl-C or cancellation: never leave the command's tree behind
        if children is not None:
            children.discard(proc.pid)
    return ShellResult(code, out.decode(errors="replace"), err.decode(errors="replace"), t1 or t2)
