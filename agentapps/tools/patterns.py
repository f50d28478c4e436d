"""JSON Schema `pattern`s matched by RE2 in linear time, so no pattern and no input can hang a run.

Python's `re` backtracks: `(a|aa)*$` or `(.*a){25}$` on a few dozen characters runs for minutes
and holds the interpreter meanwhile. RE2 (the `google-re2` package, imported on first use) matches
in time linear in the input for every pattern it accepts. What it does not accept is refused as a
configuration error: lookaround, backreferences, and repetition counts over 1000 (in total).
ECMA-262 escapes `\\uXXXX` and `\\u{X...}` are translated to RE2's `\\x{...}`; otherwise the syntax
and meaning are RE2's, which for schema patterns agree with ECMA-262 (`\\d` and `\\w` are ASCII,
`$` matches only at the very end). Text with unpaired surrogates is matched with U+FFFD for them.
"""

from __future__ import annotations

import re
from typing import Any

MAX_PATTERN = 1000  # characters
_ECMA_ESCAPE = re.compile(r"\\\\|\\u\{([0-9A-Fa-f]{1,6})\}|\\u([0-9A-Fa-f]{4})")
_WHY = (
    ("invalid perl operator: (?=", "lookahead ((?=...) or (?!...)) is not supported"),
    ("invalid perl operator: (?!", "lookahead ((?=...) or (?!...)) is not supported"),
    ("invalid perl operator: (?<", "lookbehind ((?<=...) or (?<!...)) is not supported"),
    ("invalid escape sequence: \\1", "backreferences (\\1 ...) are not supported"),
    ("invalid repetition size", "a repetition count over 1000 (counting nested ones together)"),
    ("pattern too large", "the pattern is too large"),
)


def _translate(pattern: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "\\\\":
            return "\\\\"
        return "\\x{" + (match.group(1) or match.group(2)) + "}"

    return _ECMA_ESCAPE.sub(one, pattern)


def _options() -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own parse errors on stderr
    options.never_capture = True  # matching only: no groups needed
    return options


def compiled(pattern: str) -> Any:
    """The RE2 program for `pattern` (RE2 caches them); re2.error when RE2 refuses it."""
    import re2

    return re2.compile(_translate(pattern), _options())


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used (one short phrase), or None when it can."""
    if len(pattern) > MAX_PATTERN:
        return f"it is longer than {MAX_PATTERN} characters"
    import re2

    try:
        compiled(pattern)
    except re2.error as exc:
        text = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        for start, why in _WHY:
            if text.startswith(start):
                return why
        return f"RE2 cannot parse it ({text})"
    return None


def search(pattern: str, text: str) -> bool:
    """Does `pattern` match somewhere in `text`? Call only for patterns `pattern_problem` accepts."""
    program = compiled(pattern)
    try:
        return program.search(text) is not None
    except UnicodeEncodeError:  # lone surrogates (from JSON escapes) cannot be UTF-8
        clean = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return program.search(clean) is not None
