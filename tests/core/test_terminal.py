"""core.terminal.escape: what a terminal would act on is spelled `\\uXXXX`; text stays readable."""

from __future__ import annotations

import json

import pytest

from agentapps.core.terminal import escape


@pytest.mark.parametrize("text, shown", [
    ("plain text, ünïcode, emoji 👨\u200d👩\u200d👧", "plain text, ünïcode, emoji 👨\u200d👩\u200d👧"),
    ("two\nlines\twith a tab\r\n", "two\nlines\twith a tab\r\n"),
    ("\x1b]52;c;aGk=\x07", "\\u001b]52;c;aGk=\\u0007"),  # OSC 52: the clipboard
    ("\x1b[2J", "\\u001b[2J"),  # CSI
    ("\x1bP1$qm\x1b\\", "\\u001bP1$qm\\u001b\\"),  # DCS
    ("\u009b31m \u009d0;t\u009c \u0090q", "\\u009b31m \\u009d0;t\\u009c \\u0090q"),  # 8-bit C1
    ("\x1b(0lqk\x0e\x0f", "\\u001b(0lqk\\u000e\\u000f"),  # charset switches, SO/SI
    ("fake\rline", "fake\\u000dline"),  # a CR that rewrites the line
    ("\x7f\x08\x00", "\\u007f\\u0008\\u0000"),
    ("abc\u202edef\u2066", "abc\\u202edef\\u2066"),  # bidi controls reorder what is shown
    ("\udc9b", "\\udc9b"),  # an undecodable C1 byte (surrogateescape)
])
def test_escape_table(text, shown):
    assert escape(text) == shown
    assert escape(shown) == shown  # escaping twice changes nothing


def test_strict_also_escapes_format_and_private_characters_but_not_newlines():
    assert escape("a\u200bb\u200d\n\t\U000f0000", strict=True) == "a\\u200bb\\u200d\n\\u0009\\udb80\\udc00"


def test_escaped_json_is_still_json_with_the_same_value():
    value = {"k\u009b": "\x1b]52;c;\u2066\x7f", "n": [1, "\u0085"]}
    text = json.dumps(value, ensure_ascii=False)
    assert json.loads(escape(text)) == value
    assert json.loads(escape(text, strict=True)) == value
