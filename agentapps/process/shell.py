"""Running a command for the `shell` skill: minimal environment, timeout, output caps, group kill."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentapps.errors import LimitError, UsageError

BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TERM")
MAX_OUTPUT = 1024 * 1024


@dataclass
class ShellResult:
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


def to_argv(command: str | list[str] | None, argv: list[str] | None) -> list[str]:
    if argv:
        return [str(a) for a in argv]
    if isinstance(command, list):
        return [str(a) for a in command]
    if not command or not command.strip():
        raise UsageError("shell needs `command` (a string run by /bin/sh) or `argv` (a list).")
    return ["/bin/sh", "-c", command]


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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


async def run_command(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float, stdin: str | None = None,
    max_output: int = MAX_OUTPUT, children: set[int] | None = None,
) -> ShellResult:
    """`children` collects live process-group ids so an interrupted CLI can kill them as it exits."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), env=env, start_new_session=True,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise UsageError(f"shell: command not found: {shlex.quote(argv[0])}.") from None
    if children is not None:
        children.add(proc.pid)
    try:
        if stdin is not None and proc.stdin is not None:
            proc.stdin.write(stdin.encode())
            await proc.stdin.drain()
            proc.stdin.close()
        gathered = asyncio.gather(_read_capped(proc.stdout, max_output), _read_capped(proc.stderr, max_output),
                                  proc.wait())
        # on cancellation nobody awaits the gather again: consume its outcome so asyncio stays quiet
        gathered.add_done_callback(lambda f: f.cancelled() or f.exception())
        try:
            (out, t1), (err, t2), code = await asyncio.wait_for(gathered, timeout)
        except TimeoutError:
            raise LimitError(f"shell: {shlex.join(argv)[:120]} ran longer than {timeout:g} s and was killed.") from None
    finally:
        if proc.returncode is None:
            _kill_group(proc)  # timeout, Ctrl-C or cancellation: never leave the process group behind
            await proc.wait()
        else:
            _kill_group(proc)  # children the command left running in its group
        if children is not None:
            children.discard(proc.pid)
    return ShellResult(code, out.decode(errors="replace"), err.decode(errors="replace"), t1 or t2)
