"""The host's handle on one sandbox process (child.py): start it bare, frame evals, kill and reap it.

The process gets no environment (but the loader path Python may need), no fds but its end of a
socketpair, cwd `/`, an RLIMIT_DATA cap, no core dumps, and dies with the host (death signal and
socket hang-up). The host never waits on it without a bound: everything it sends back is read
with a size cap, and `kill` does not need the process to cooperate.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from agentapps.errors import AgentAppsError

CHILD = Path(__file__).with_name("child.py")
PASSED_ENV = ("LD_LIBRARY_PATH",)  # what a shared-library Python build may need to start
REAP_WAIT_S = 2.0

Op = tuple[str, str] | tuple[str, str, str]
"""("B", script) evaluates the script and keeps its value; ("S", key, value) sets a string
property of that value; ("G", key) reads one (see child.py)."""


class SandboxDied(Exception):
    """The sandbox process ended (or its socket did) while the host waited for it."""


class FrameTooLarge(Exception):
    """The sandbox process announced a frame over the host's cap."""


@dataclass(frozen=True)
class Death:
    """How a sandbox process ended: its exit status and what V8 or Python printed first."""

    returncode: int | None
    stderr: str

    @property
    def out_of_memory(self) -> bool:
        """V8 aborts with SIGTRAP when an allocation fails (RLIMIT_DATA, or a fatal size error);
        the kernel's OOM killer sends SIGKILL; Python in the child raises MemoryError."""
        return (self.returncode in (-signal.SIGTRAP, -signal.SIGKILL)
                or "out of memory" in self.stderr.lower() or "MemoryError" in self.stderr)

    def summary(self) -> str:
        code = self.returncode
        how = ("still running" if code is None else f"signal {signal.Signals(-code).name}"
               if code < 0 and -code in signal.valid_signals() else f"exit status {code}")
        lines = [line.strip() for line in self.stderr.splitlines()
                 if "Fatal" in line or "out of memory" in line.lower() or "Error" in line]
        return how + (f": {lines[0][:200]}" if lines else "")


@cache
def _mini_racer_dir() -> str:
    spec = importlib.util.find_spec("py_mini_racer")  # finds it without importing it
    if spec is None or not spec.submodule_search_locations:
        raise AgentAppsError("The agent sandbox needs mini-racer, which is not installed: "
                             "pip install mini-racer.")
    return str(next(iter(spec.submodule_search_locations)))


class Child:
    """One running sandbox process and the host's end of its socket."""

    def __init__(self, heap_bytes: int, data_bytes: int, max_frame: int,
                 package: str | None = None) -> None:
        """`package`: mini-racer's package folder (default: the installed one)."""
        self.max_frame = max_frame
        ours, theirs = socket.socketpair()
        self._buffer = bytearray()
        self._outbox = b""  # what post() could not hand to the socket at once
        self._unread = 0  # replies to posted frames, read before the next request's
        with theirs:
            deathsig = threading.current_thread() is threading.main_thread()  # see child.harden
            argv = [sys.executable, "-I", "-S", "-B", str(CHILD), str(theirs.fileno()),
                    package or _mini_racer_dir(), str(data_bytes), str(heap_bytes), str(os.getpid()),
                    "1" if deathsig else "0"]
            env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
            try:
                self.proc = subprocess.Popen(
                    argv, pass_fds=(theirs.fileno(),), close_fds=True, env=env, cwd="/",
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            except OSError as exc:
                ours.close()
                raise AgentAppsError(f"The agent sandbox process could not start: {exc}.") from None
            except BaseException:
                ours.close()
                raise
        ours.setblocking(False)
        self._sock = ours
        # a Sandbox dropped without close() must not leave its process running
        self._finalizer = weakref.finalize(self, _stop, self.proc, ours)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def post(self, ops: tuple[Op, ...]) -> None:
        """Send a frame without waiting (from sync code too); `settle` reads its reply."""
        frame = _frame(ops)
        try:
            sent = 0 if self._outbox else self._sock.send(frame)
        except BlockingIOError:
            sent = 0
        except OSError:  # the process is already gone: the next request finds out
            sent = len(frame)
        self._outbox += frame[sent:]
        self._unread += 1

    async def settle(self) -> tuple[bytes, bytes] | None:
        """Finish sending posted frames and read their replies: the first that is not a plain
        value (tag, payload), or None once all were."""
        loop = asyncio.get_running_loop()
        frame, self._outbox = self._outbox, b""
        try:
            if frame:
                await loop.sock_sendall(self._sock, frame)
            while self._unread:
                reply = await self._read_frame(loop)
                self._unread -= 1
                if reply[:1] not in (b"V", b"N"):
                    return reply[:1], reply[1:]
        except OSError as exc:  # reset or closed: the process is gone or going
            raise SandboxDied(str(exc)) from None
        return None

    async def request(self, ops: tuple[Op, ...]) -> tuple[bytes, bytes]:
        """Send one frame of operations; return the reply's tag byte and payload."""
        if self._unread or self._outbox:
            failed = await self.settle()
            if failed is not None:
                return failed
        loop = asyncio.get_running_loop()
        try:
            await loop.sock_sendall(self._sock, _frame(ops))
            reply = await self._read_frame(loop)
        except OSError as exc:
            raise SandboxDied(str(exc)) from None
        return reply[:1], reply[1:]

    async def _read_frame(self, loop: asyncio.AbstractEventLoop) -> bytes:
        buffer = self._buffer
        while True:
            if len(buffer) >= 4:
                size = int.from_bytes(buffer[:4], "big")
                if size > self.max_frame:
                    raise FrameTooLarge(f"a {size}-byte frame (the cap is {self.max_frame})")
                if len(buffer) >= 4 + size:
                    body = bytes(buffer[4:4 + size])
                    del buffer[:4 + size]
                    if not body:
                        raise SandboxDied("an empty frame")
                    return body
                want = 4 + size - len(buffer)
            else:
                want = 4 - len(buffer)
            chunk = await loop.sock_recv(self._sock, max(want, 1 << 16))
            if not chunk:
                raise SandboxDied("the sandbox process closed its socket")
            buffer += chunk

    def kill(self) -> None:
        """SIGKILL the process and close the socket; never waits (see `reap`)."""
        self._sock.close()
        if self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:  # pragma: no cover - already reaped
                pass

    async def death(self) -> Death:
        """Wait (bounded) for the process to end on its own and say how it did."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REAP_WAIT_S
        while self.proc.poll() is None and loop.time() < deadline:
            await asyncio.sleep(0.005)
        code = self.proc.returncode
        stderr = ""
        if code is not None and self.proc.stderr is not None:
            os.set_blocking(self.proc.stderr.fileno(), False)
            try:
                stderr = (self.proc.stderr.read(8192) or b"").decode("utf-8", "replace")
            except OSError:  # pragma: no cover - nothing to read
                pass
        return Death(code, stderr)

    def reap(self, wait: float = REAP_WAIT_S) -> bool:
        """Kill, wait up to `wait` seconds for the exit, and release the pipe; True once gone."""
        self.kill()
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            return False
        self._finalizer.detach()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        return True


def _stop(proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
    sock.close()
    if proc.returncode is None:
        proc.kill()
    try:
        proc.wait(REAP_WAIT_S)
    except subprocess.TimeoutExpired:  # pragma: no cover - subprocess reaps it later
        pass
    if proc.stderr is not None:
        proc.stderr.close()


def _frame(ops: tuple[Op, ...]) -> bytes:
    parts: list[bytes] = []
    for op in ops:
        key = op[1].encode("utf-8", "surrogatepass")
        value = op[2].encode("utf-8", "surrogatepass") if len(op) > 2 else b""
        parts += (op[0].encode(), len(key).to_bytes(4, "big"), key, len(value).to_bytes(4, "big"),
                  value)
    body = b"".join(parts)
    return len(body).to_bytes(4, "big") + body
