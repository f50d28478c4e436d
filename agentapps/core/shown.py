"""How the kernel's plain classes print: as a dataclass would, without importing dataclasses (it
imports inspect: milliseconds of every cold start). Such a class names its fields in its
constructor's order as `FIELDS` (and, where it has them, as its `__slots__`)."""

from __future__ import annotations

from _thread import get_ident
from collections.abc import Iterable

_SHOWING: set[tuple[int, int]] = set()  # (object, thread) being printed: a cycle prints "..."


def fields_repr(obj: object, names: Iterable[str]) -> str:
    """`Name(field=value, ...)` over `names`, in order."""
    key = (id(obj), get_ident())
    if key in _SHOWING:
        return "..."
    _SHOWING.add(key)
    try:
        shown = ", ".join(f"{name}={getattr(obj, name)!r}" for name in names)
    finally:
        _SHOWING.discard(key)
    return f"{type(obj).__qualname__}({shown})"
