"""The CLI's agent progress display: plain lines off a terminal, spinner and marks on one."""

from __future__ import annotations

import io
import re

import pytest

from agentapps.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


EVENTS = [
    ("agent-start", {"skill": "sum", "model": "m1", "provider": "agent-scripted", "depth": 0}),
    ("turn-start", {"turnNumber": 1, "depth": 0}),
    ("agent-message", {"text": "Counting ", "delta": True, "depth": 0}),
    ("agent-message", {"text": "now.", "delta": True, "depth": 0}),
    ("agent-message", {"text": "Counting now.", "depth": 0}),  # the full text after deltas: not repeated
    ("tool-call", {"tool": "invoke", "args": {"code": "return 1\nreturn 2"}, "depth": 0}),
    ("tool-result", {"tool": "invoke", "args": {"code": "return 1\nreturn 2"}, "ms": 12.3,
                     "status": "success", "depth": 0}),
    ("tool-error", {"tool": "invoke", "args": {"code": "boom()"}, "ms": 1, "status": "error", "depth": 1}),
    ("turn-end", {"depth": 0}),
    ("agent-complete", {"stopReason": "answered", "turns": 1, "steps": 1,
                        "usage": {"inputTokens": 5, "outputTokens": 2}, "depth": 0}),
]


def _play(stream: io.StringIO) -> str:
    progress = Progress(stream)
    for kind, data in EVENTS:
        progress(kind, data)
    progress.close()
    return stream.getvalue()


def test_plain_output_is_one_line_per_event_with_streamed_text(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = _play(io.StringIO())
    assert out.splitlines() == [
        "agent: sum · m1 (agent-scripted)",
        "Counting now.",
        "ok invoke 12 ms  return 1 …",
        "  error invoke 1 ms  boom()",
        "agent: answered after 1 turn(s), 1 step(s), 5 in / 2 out tokens",
    ]


def test_a_terminal_gets_a_spinner_and_marks(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = _play(Terminal())
    assert "✓ invoke 12 ms" in out and "✗ invoke 1 ms" in out and "\x1b[" in out
    assert re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out).count("Counting now.") == 1


def test_no_color_on_a_terminal_means_plain(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in _play(Terminal())
