"""JSON text from agent code, parsed on the host without recursion trouble or broken Unicode.

`json.loads` recurses per nesting level and raises RecursionError near the interpreter's limit,
and whatever later walks a deep value (json.dumps, a schema check, a session write) recurses
again. So text nested deeper than the caller's bound is refused before it is parsed, by a scan
that does not recurse and runs at C speed (regex and bytes.translate), not per character in Python.
A lone surrogate (`"\\ud800"`, legal in a JavaScript string) would parse into a str that no UTF-8
writer accepts, and end the run at the next log or output; it becomes U+FFFD first.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import accumulate
from typing import Any

# an escaped backslash (kept), a surrogate pair (kept), or a lone surrogate (replaced)
_ESCAPES = re.compile(r"(\\\\)|\\u(d[89ab][0-9a-f]{2})(\\ud[c-f][0-9a-f]{2})?|\\ud[c-f][0-9a-f]{2}",
                      re.IGNORECASE)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# bytes.translate: an opener becomes 0x01 (+1) and a closer 0xff (-1 as a signed byte); the
# delete argument drops everything else
_DELTAS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_OTHERS = bytes(b for b in range(256) if b not in b"[]{}")


class TooDeep(ValueError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"nested deeper than {limit} levels")
        self.limit = limit


def depth(text: str) -> int:
    """How deeply the arrays and objects of JSON `text` nest (0 for a scalar)."""
    bare = _STRING.sub("", text)  # brackets inside strings do not nest
    deltas = bare.encode("ascii", "ignore").translate(_DELTAS, _OTHERS)
    return max(accumulate(array("b", deltas)), default=0)


def wellformed(text: str) -> str:
    """JSON `text` with every escaped lone surrogate replaced by U+FFFD."""
    return _ESCAPES.sub(_keep_or_replace, text) if "\\u" in text else text


def _keep_or_replace(match: re.Match[str]) -> str:
    return match.group(0) if match.group(1) or match.group(3) else "\\ufffd"


def loads(text: str, max_depth: int) -> Any:
    """`json.loads(text)`, refusing (TooDeep) any value nested deeper than `max_depth`."""
    if text.count("[") + text.count("{") > max_depth and depth(text) > max_depth:
        raise TooDeep(max_depth)
    try:
        return json.loads(wellformed(text))
    except RecursionError:  # pragma: no cover - only if the caller's stack is already deep
        raise TooDeep(max_depth) from None
