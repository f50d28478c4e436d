"""What the user types in `agentapps repl` while the agent works on a turn (a terminal only).

A line typed during a turn is a follow-up: it is kept, and sent as the next message when the agent
would otherwise ask for one (the prompt is skipped). `/steer TEXT` steers: the running snippet and
its skill calls (a `shell` command too) stop at once, the turn's remaining tool calls are skipped,
and TEXT is the model's next step (agentapps/agent/steering.py). The terminal stays in its normal
line mode, so a line is read only once Enter is pressed, and Ctrl-C still interrupts the turn;
Ctrl-D ends the session once the turn (and what was queued) is over.
"""

from __future__ import annotations

import os
import select
import sys
from typing import TextIO

STEER = "/steer"


class TypeAhead:
    """Lines typed on the terminal `fd` during a turn: follow-ups kept, steers handed on."""

    def __init__(self, fd: int, shown: TextIO | None = None) -> None:
        self.fd = fd
        self.shown = shown or sys.stderr
        self.follow_ups: list[str] = []
        self.ended = False  # Ctrl-D during the turn: the session ends once it is over
        self._partial = b""

    def poll(self, timeout: float) -> list[str]:
        """Wait up to `timeout` s for typed lines; returns the steering texts among them (the
        follow-ups are kept). Ctrl-C raises KeyboardInterrupt here, as it would anywhere."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        chunk = os.read(self.fd, 65536)
        if not chunk:
            if not self.ended:
                self.ended = True
                self._say("end of input: the session ends after this turn")
            return []
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        steers = []
        for raw in lines:
            line = raw.decode(errors="replace").rstrip("\r")
            if line.strip() == STEER or line.startswith(STEER + " "):
                text = line[len(STEER):].strip()
                if text:
                    steers.append(text)
                    self._say("steering: the running tool calls stop; the model takes your message next")
                else:
                    self._say(f"type {STEER} and the message to steer with, on one line")
            elif line.strip():
                self.follow_ups.append(line)
                self._say("queued: sent as your next message when the agent finishes this turn")
        return steers

    def take(self) -> str | None:
        """The queued follow-ups as one message (None when there are none)."""
        if not self.follow_ups:
            return None
        message = "\n".join(self.follow_ups)
        self.follow_ups.clear()
        return message

    def drop(self) -> None:
        self.follow_ups.clear()
        self._partial = b""

    def _say(self, text: str) -> None:
        self.shown.write(f"({text})\n")
        self.shown.flush()
