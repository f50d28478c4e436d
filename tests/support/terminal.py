"""The CLI on a pseudo-terminal: a real `python -m agentapps` process whose stdin, stdout and stderr
are a terminal, for the tests about what a terminal changes (the REPL, approval questions, escaping).

    term = Terminal(project, "repl", "talk")      # started; CI and NO_COLOR as the test asks
    term.expect("> "); term.send("hello\\n")       # wait for text, type keys
    assert term.close() == 0                       # the exit code, once it exits

    code = Terminal(project, "run", "writer").finish(answers=[("Allow?", "y\\n")])  # to the end

`output` is the text shown so far (UTF-8, decoded as it arrives), `raw` the same bytes undecoded.
"""

from __future__ import annotations

import codecs
import os
import pty
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

CTRL_C, CTRL_D = "\x03", "\x04"


class Terminal:
    """`agentapps ARGV` on a pseudo-terminal, in `project` with `env` added. CI is unset (a terminal
    is not a CI log); NO_COLOR stays set unless `color`."""

    def __init__(self, project: Any, *argv: str, color: bool = False, **env: str) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # child: become the CLI on the pseudo-terminal
            try:
                os.chdir(project.root)
                environment = project.env(**env)
                environment.pop("CI", None)
                if color:
                    environment.pop("NO_COLOR", None)
                os.execve(sys.executable, [sys.executable, "-m", "agentapps", *argv], environment)
            finally:
                os._exit(127)  # exec failed: never return into the test runner
        self.pid, self.fd = pid, fd
        self.raw = b""
        self.output = ""
        self.seen = 0  # how far `expect` has read in `output`
        self.status: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def _read(self, timeout: float) -> bool:
        """Read what the terminal shows within `timeout`; False once it is closed (the CLI exited)."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # EIO: the other side is gone
            return False
        if not chunk:
            return False
        self.raw += chunk
        self.output += self._decoder.decode(chunk)
        return True

    def expect(self, text: str, timeout: float = 20) -> float:
        """Wait for `text` after what was expected before; returns the seconds it took."""
        started = time.monotonic()
        while text not in self.output[self.seen:]:
            if time.monotonic() - started > timeout:
                self._kill()  # a failed test leaves no CLI running on its terminal
                raise AssertionError(f"never saw {text!r} in:\n{self.output[self.seen:]}")
            self._read(0.1)
        self.seen = self.output.index(text, self.seen) + len(text)
        return time.monotonic() - started

    def send(self, keys: str | bytes) -> None:
        os.write(self.fd, keys.encode() if isinstance(keys, str) else keys)

    def finish(self, answers: Sequence[tuple[str, str]] = (), respond: Callable[[bytes], bytes | None] | None = None,
               timeout: float = 60) -> int:
        """Read to the end and return the exit code. Each of `answers` (prompt, keys) is typed, in
        order, once its prompt has been shown; `respond(everything shown so far)` may return keys."""
        pending = list(answers)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.1):
            if pending and pending[0][0] in self.output:
                self.send(pending.pop(0)[1])
            keys = respond(self.raw) if respond is not None else None
            if keys:
                self.send(keys)
        return self.close(timeout=max(deadline - time.monotonic(), 1.0))

    def close(self, timeout: float = 20) -> int:
        """Wait for the CLI to exit (reading what it still shows) and return its exit code; a CLI
        still running after `timeout` is killed and fails the test."""
        if self.status is not None:
            return self.status
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                while self._read(0.1) and select.select([self.fd], [], [], 0)[0]:
                    pass  # what is left to read
                os.close(self.fd)
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            self._read(0.1)
        self._kill()
        raise AssertionError(f"agentapps did not exit within {timeout:g} s; it showed:\n{self.output}")

    def _kill(self) -> None:
        """End the CLI (and its process group: the sandbox processes it started) and close the terminal."""
        if self.status is not None:
            return
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(self.pid, 0)
        self.status = os.waitstatus_to_exitcode(status)
        os.close(self.fd)
