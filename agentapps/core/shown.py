"""How the kernel's plain classes print: as a dataclass would, without importing dataclasses. Such
a class names its fields in its constructor's order as `FIELDS` (and, where it has them, as its
`__slots__`).

Why plain classes: importing dataclasses (with the inspect it imports) cost a cold start 7.5-8.4 ms
over the modules a run loads anyway (re, functools, enum, typing), on this project's 2-core
machine, idle, five runs of `python -X importtime` on 2026-11-27: more than the 4 ms a start-up
trick must buy here. tests/test_architecture.py fails if a plain code-skill run imports
dataclasses or inspect (the trick would then buy nothing); tests/test_plain_classes.py keeps the
constructor, repr and copies a dataclass would give."""

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
