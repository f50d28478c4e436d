"""A skill's result as JSON data before the CLI prints it: anything JSON cannot say is a clear error.

JSON data is objects with text keys, arrays (tuples become arrays), text, finite numbers, true,
false and null. Text holding unpaired surrogates (half of an emoji cut by agent code) is printed
with U+FFFD in their place and a warning. Everything else — NaN and infinities, integers of more
than 4300 digits, non-text keys, reference cycles, nesting deeper than `MAX_DEPTH`, bytes, sets and
other objects — fails the run (exit 1) with a message naming the skill and where the value is.
"""

from __future__ import annotations

import math
from typing import Any

from agentapps.errors import SkillError

MAX_DEPTH = 256  # deeper data cannot be printed safely (json and the redactor recurse); no reader wants it


class _NotJson(Exception):
    def __init__(self, where: tuple[str | int, ...], what: str) -> None:
        super().__init__(where, what)
        self.path, self.what = where, what

    @property
    def where(self) -> str:
        """`result["key"][3]`: the path is kept as parts and spelled only for the message (spelling
        each value's path as it was walked cost more than the walk)."""
        return str(self.path[0]) + "".join(f"[{_short(p)}]" if isinstance(p, str) else f"[{p}]"
                                           for p in self.path[1:])


def _text(value: str, fixed: list[int]) -> str:
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        clean = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        fixed[0] += sum(1 for a, b in zip(value, clean, strict=True) if a != b)
        return clean


def _kind(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return "bytes (decode them to text first)"
    if isinstance(value, (set, frozenset)):
        return "a set (return a list)"
    return f"a {type(value).__name__} object"


def _convert(value: Any, where: tuple[str | int, ...], depth: int, seen: set[int], fixed: list[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value, fixed)
    if isinstance(value, int):
        try:
            repr(value)
        except ValueError:
            raise _NotJson(where, "an integer of more than 4300 digits (return it as text)") from None
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(where, f"{value!r}, which is not a JSON number")
        return value
    if not isinstance(value, (dict, list, tuple)):
        raise _NotJson(where, _kind(value))
    if depth >= MAX_DEPTH:
        raise _NotJson(where, f"nested deeper than {MAX_DEPTH} levels")
    if id(value) in seen:
        raise _NotJson(where, "the value itself again (a reference cycle)")
    seen.add(id(value))
    try:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _NotJson(where, f"an object with a {type(key).__name__} key ({_short(key)}); "
                                          "JSON keys are text")
                out[_text(key, fixed)] = _convert(item, (*where, key), depth + 1, seen, fixed)
            return out
        items = []
        for i, item in enumerate(value):  # a loop, not a comprehension: one frame per level
            items.append(_convert(item, (*where, i), depth + 1, seen, fixed))
        return items
    finally:
        seen.discard(id(value))


def _short(key: Any) -> str:
    try:
        text = repr(key)
    except Exception:  # noqa: BLE001 - a key whose repr fails is shown by its type
        text = type(key).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def json_result(value: Any, skill: str | None) -> tuple[Any, int]:
    """(the result as JSON data, how many unpaired surrogates were replaced); SkillError if not JSON."""
    fixed = [0]
    try:
        return _convert(value, ("result",), 0, set(), fixed), fixed[0]
    except _NotJson as exc:
        name = f"Skill '{skill}'" if skill else "The skill"
        raise SkillError(
            f"{name} returned a result that is not JSON: {exc.where} is {exc.what}. Return objects, "
            "arrays, text, finite numbers, true, false or null.", skill=skill) from None
