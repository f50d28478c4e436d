"""What may reach a terminal: text from models, skills and servers with its control characters
escaped, and typed-ahead input dropped before a question is asked.

`escape` is the one function every writer uses (progress, error lines, warnings, `runs show`, the
REPL, approval and elicitation questions): an escaped character is shown as `\\uXXXX`, the way
JSON spells it, so a JSON object stays valid JSON and escaping twice changes nothing.
"""

from __future__ import annotations

import re
from typing import Any

# What a terminal acts on: C0 controls but newline and tab (ESC starts CSI, OSC, DCS and the
# charset switches `ESC(0`; SO/SI shift charsets; BEL, BS; CR not before LF rewrites the line), DEL,
# the 8-bit C1 controls (U+009B is CSI, U+009D OSC, U+0090 DCS), bidi controls that reorder what is
# shown, and the same C1 bytes when they arrive undecodable (surrogateescape).
# (a raw string: `re` reads the escapes, so the source holds no lone surrogate a UTF-8 writer refuses)
_TERMINAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                       r"\u2066-\u2069\udc80-\udc9f]|\r(?!\n)")
# What a question must show as it is (strict): also every other format character (zero-width
# spaces and joiners), private-use, unassigned and surrogate code points, line/paragraph separators.
_UNSAFE = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))


def _code(ch: str) -> str:
    point = ord(ch)
    if point > 0xFFFF:  # a surrogate pair, as JSON writes it
        point -= 0x10000
        return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"
    return f"\\u{point:04x}"


def escape(text: str, *, strict: bool = False) -> str:
    """`text` as a terminal should show it: what a terminal would act on written as `\\uXXXX`.
    `strict` (a question the user answers): every control, format or unassigned character but the
    newline, so nothing in it can be hidden or reordered."""
    if not strict:
        return _TERMINAL.sub(lambda m: _code(m.group()), text)
    import unicodedata  # only when a human is asked

    return "".join(_code(ch) if ch != "\n" and unicodedata.category(ch) in _UNSAFE else ch for ch in text)


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def flush_input(stream: Any) -> None:
    """Drop what was typed on the terminal `stream` and not read yet, so an answer typed before a
    question was shown (to text that imitated it) cannot answer it."""
    if not is_terminal(stream):
        return
    try:
        import termios

        termios.tcflush(stream.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError, AttributeError):  # no termios (Windows): nothing to drop
        pass
