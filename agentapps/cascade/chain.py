"""Middleware chains: which metadata keys name skills, their order (topological, stable), and cycle cuts."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

PHASES = ("$pre-configure", "$configure", "$post-configure", "$pre-execute", "$execute", "$post-execute")
DEFAULT_AFTER = ["$post-configure"]
DEFAULT_BEFORE = ["$execute"]


def candidate_entries(meta: dict[str, Any], exists: Callable[[str], bool]) -> list[str]:
    """Metadata keys (not annotations, not switched off) that name an existing skill."""
    return [
        key for key, value in meta.items()
        if not key.startswith("$") and value is not False and value is not None and exists(key)
    ]


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def order_entries(
    entries: list[str], order: dict[str, Any], own_order: Callable[[str], dict[str, Any]]
) -> list[str]:
    """Sort entries between the phase markers by before/after constraints; ties keep their order."""
    nodes = list(PHASES) + [e for e in entries if e not in PHASES]
    index = {n: i for i, n in enumerate(nodes)}
    edges: dict[str, set[str]] = {n: set() for n in nodes}

    def add(a: str, b: str) -> None:  # a runs before b
        if a in index and b in index and a != b:
            edges[a].add(b)

    for a, b in itertools.pairwise(PHASES):
        add(a, b)
    for node in nodes[len(PHASES):]:
        spec = order.get(node) if isinstance(order.get(node), dict) else None
        if spec is None:
            own = own_order(node)
            spec = own if ("before" in own or "after" in own) else None
        before = _as_list(spec.get("before")) if spec else DEFAULT_BEFORE
        after = _as_list(spec.get("after")) if spec else DEFAULT_AFTER
        for b in before:
            add(node, b)
        for a in after:
            add(a, node)
    incoming = {n: 0 for n in nodes}
    for a in nodes:
        for b in edges[a]:
            incoming[b] += 1
    result: list[str] = []
    remaining = set(nodes)
    while remaining:
        ready = [n for n in remaining if incoming[n] == 0]
        # a constraint cycle is cut at the earliest-declared node instead of failing the run
        pick = min(ready or remaining, key=index.__getitem__)
        remaining.discard(pick)
        result.append(pick)
        for b in edges[pick]:
            incoming[b] -= 1
    return [n for n in result if n not in PHASES]


def reaches(start: str, target: str, entries_of: Callable[[str], list[str]]) -> bool:
    """Does the middleware graph lead from `start`'s chain back to `target`?"""
    seen: set[str] = set()
    stack = list(entries_of(start))
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack.extend(entries_of(node))
    return False
