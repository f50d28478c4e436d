"""Path expressions (`args.items[0].name`, `a.0.b`) read from dicts, lists and objects."""

from __future__ import annotations

import re
from typing import Any

_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]|\[['\"]([^'\"]*)['\"]\]")
MISSING: Any = object()


def split_path(expr: str) -> list[str | int]:
    parts: list[str | int] = []
    for match in _SEGMENT.finditer(expr):
        name, index, quoted = match.groups()
        if index is not None:
            parts.append(int(index))
        elif quoted is not None:
            parts.append(quoted)
        elif name is not None:
            parts.append(int(name) if name.isdigit() else name)
    return parts


def path_get(obj: Any, expr: str, default: Any = None) -> Any:
    """Follow `expr` through mappings, sequences and public attributes; `default` when it leads nowhere."""
    current = obj
    for part in split_path(expr):
        if isinstance(part, str) and part.startswith("_"):
            return default  # never reach private attributes through an expression
        if isinstance(current, dict):
            if part in current:
                current = current[part]
            elif isinstance(part, int) and str(part) in current:
                current = current[str(part)]
            else:
                return default
        elif isinstance(current, (list, tuple)):
            if isinstance(part, int) and -len(current) <= part < len(current):
                current = current[part]
            else:
                return default
        elif isinstance(part, str) and hasattr(type(current), "__path_get__"):
            current = current.__path_get__(part, MISSING)
            if current is MISSING:
                return default
        else:
            return default
    return current
