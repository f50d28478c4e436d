"""The gateway a run reads user input from: where `gateway-receive` (and so a persistent agent
between turns) gets the next message.

The command line installs one per run: the terminal (a prompt on stderr) or, when stdin is not a
terminal, stdin's lines; `agentapps repl` installs its own (readline, Ctrl-C). A server installs
none: there `gateway-receive` fails with NoGatewayError and a persistent agent just continues.
`receive()` returns the next message, or None when input has ended (end of file, Ctrl-D).

A gateway may also interrupt the current turn (the REPL's Ctrl-C): the agent then stops the
running snippet, refuses the turn's remaining tool calls and waits for the next message.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TextIO

from agentapps.errors import ConfigError
from agentapps.tools.loader import RUN_STARTED

if TYPE_CHECKING:  # a run installs a gateway; only a persistent agent's wait needs the loop
    import asyncio
    import concurrent.futures


class NoGatewayError(ConfigError):
    """No gateway is installed in this process (a server, an in-process call)."""


class Gateway:
    """Reads messages one at a time from a blocking `read(prompt)` in a daemon thread, so a
    cancelled wait never blocks the process's exit and a read in progress is never doubled."""

    def __init__(self, read: Callable[[str | None], str | None], name: str = "gateway") -> None:
        self._read = read
        self.name = name
        self._pending: concurrent.futures.Future[str | None] | None = None
        self.ended = False
        self.interrupted = False  # the user interrupted the current turn (REPL Ctrl-C)
        # the waiting agent's own turns and steps so far, set each time it asks for the next
        # message (the REPL's run log counts a turn's share from them)
        self.agent_counts: dict[str, int] = {}
        self._cancellable: asyncio.Task[Any] | None = None

    async def receive(self, prompt: str | None = None) -> str | None:
        import asyncio
        import concurrent.futures

        if self.ended:
            return None
        if self._pending is None:
            future: concurrent.futures.Future[str | None] = concurrent.futures.Future()
            threading.Thread(target=self._reader, args=(future, prompt), daemon=True,
                             name="agentapps-gateway").start()
            self._pending = future
        line = await asyncio.shield(asyncio.wrap_future(self._pending))
        self._pending = None
        if line is None:
            self.ended = True
        else:  # a message starts a new run: skill files written before it may now be loaded
            RUN_STARTED.set(time.time_ns())
        return line

    def _reader(self, future: concurrent.futures.Future[str | None], prompt: str | None) -> None:
        try:
            future.set_result(self._read(prompt))
        except EOFError:
            future.set_result(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting task
            future.set_exception(exc)

    # -- turn interrupts (used by the REPL) -----------------------------------------------------

    def watch(self, task: asyncio.Task[Any] | None) -> None:
        """The running snippet an interrupt stops (None when none runs). An interrupt that came
        after the snippet's call was let through but before it started stops it at once."""
        self._cancellable = task
        if task is not None and self.interrupted:
            task.cancel()

    def interrupt(self) -> None:
        """Stop the current turn (call on the event loop's thread)."""
        self.interrupted = True
        if self._cancellable is not None and not self._cancellable.done():
            self._cancellable.cancel()

    def take_interrupt(self) -> bool:
        """Whether the turn that just ended was interrupted (and forget it)."""
        was, self.interrupted = self.interrupted, False
        return was


def stdin_gateway(stdin: TextIO | None = None, prompt_stream: TextIO | None = None) -> Gateway:
    """The command line's gateway: a prompt on stderr when stdin is a terminal, else stdin lines."""
    stdin = stdin or sys.stdin
    shown = prompt_stream or sys.stderr
    tty = stdin.isatty()

    def read(prompt: str | None) -> str | None:
        if tty:
            from agentapps.core.terminal import escape

            shown.write(escape(prompt or "> "))  # the prompt may be the model's text
            shown.flush()
        line = stdin.readline()
        return None if line == "" else line.rstrip("\n")

    return Gateway(read, "terminal" if tty else "stdin")


GATEWAY: ContextVar[Gateway | None] = ContextVar("agentapps_gateway", default=None)


async def receive(prompt: str | None = None) -> str | None:
    """The next message from this run's gateway (None: input ended); NoGatewayError without one."""
    gateway = GATEWAY.get()
    if gateway is None:
        raise NoGatewayError("No gateway for user input in this process: gateway-receive reads the "
                             "terminal (or stdin lines) under 'agentapps run' and 'agentapps repl'.")
    return await gateway.receive(prompt)
