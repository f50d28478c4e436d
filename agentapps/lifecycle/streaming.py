"""Redaction of text that arrives in pieces: a secret split across two pieces is still caught.

Each piece is redacted together with what was held back from the one before; the end of the result
that could be the start of a secret (in any of its encoded forms) is held back again. `end()` gives
what is still held once nothing more can complete it. The CLI's stdout and stderr, the deltas of
streamed model text that `serve` sends, and the MCP server's progress messages all go through one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentapps.secrets import Redactor


class StreamRedactor:
    """Redacts a stream of text pieces with `redactor`, holding back a possible secret's start."""

    __slots__ = ("held", "redactor")

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.held = ""

    def feed(self, piece: str) -> str:
        """The part of `held + piece` that can be shown now, redacted."""
        text = self.redactor.redact(self.held + piece)
        hold = self.redactor.held_back(text)
        self.held = text[len(text) - hold:] if hold else ""
        return text[: len(text) - hold]

    def end(self) -> str:
        """What was held back (the stream is over: nothing can complete a secret now)."""
        held, self.held = self.held, ""
        return held
