"""The ordering rule of middleware chains, as a pure function: phases, `$order`, a middleware's own
before/after, the default slot, stable ties, and cycle cuts (a table, as pluggy pins hook order)."""

from __future__ import annotations

from typing import Any

import pytest

from agentapps.cascade.chain import order_entries

PRE, EXE = "$pre-execute", "$execute"
STANDARD = {
    "validate-allowed-tools": {"before": ["$pre-configure"]},
    "directives": {"after": ["$post-configure"], "before": [PRE]},
    "validate-args": {"after": [PRE], "before": [EXE]},
    "trust": {"after": ["validate-args"], "before": [EXE]},
    "execute": {"after": [EXE], "before": ["$post-execute"]},
}

# (id, entries in metadata order, $order, each middleware's own metadata, expected chain)
CASES: list[tuple[str, list[str], dict[str, Any], dict[str, dict[str, Any]], list[str]]] = [
    ("empty", [], {}, {}, []),
    ("one entry, default slot", ["m"], {}, {}, ["m"]),
    ("ties keep metadata order", ["b", "a", "c"], {}, {}, ["b", "a", "c"]),
    ("phases order the standard chain", ["execute", "trust", "validate-args", "directives",
                                         "validate-allowed-tools"], STANDARD, {},
     ["validate-allowed-tools", "directives", "validate-args", "trust", "execute"]),
    ("default slot is after configure, before execute", ["execute", "m", "validate-allowed-tools"],
     STANDARD, {}, ["validate-allowed-tools", "m", "execute"]),
    ("entries ready together keep metadata order", ["execute", "m", "directives"], STANDARD, {},
     ["m", "directives", "execute"]),
    ("own after/before places an unlisted middleware", ["execute", "timing", "directives"], STANDARD,
     {"timing": {"after": [PRE], "before": [EXE]}}, ["directives", "timing", "execute"]),
    ("$order beats the middleware's own declaration", ["execute", "m"],
     {**STANDARD, "m": {"after": [EXE]}}, {"m": {"before": ["$pre-configure"]}}, ["execute", "m"]),
    ("before a named entry", ["a", "b"], {"b": {"before": ["a"]}}, {}, ["b", "a"]),
    ("after a named entry", ["a", "b"], {"a": {"after": ["b"]}}, {}, ["b", "a"]),
    ("constraints on absent names are ignored", ["a"], {"a": {"after": ["ghost"], "before": ["nobody"]}},
     {}, ["a"]),
    ("a string is a one-item list", ["a", "b"], {"a": {"after": "b"}}, {}, ["b", "a"]),
    ("a two-node cycle is cut at the earlier-declared node", ["a", "b"],
     {"a": {"after": ["b"]}, "b": {"after": ["a"]}}, {}, ["a", "b"]),
    ("a three-node cycle keeps the others' order", ["x", "a", "b", "c"],
     {"a": {"after": ["c"]}, "b": {"after": ["a"]}, "c": {"after": ["b"]}}, {}, ["x", "a", "b", "c"]),
    ("post-execute entries follow execute", ["after-all", "execute"],
     {**STANDARD, "after-all": {"after": ["$post-execute"]}}, {}, ["execute", "after-all"]),
    ("an entry before $pre-configure comes first", ["z", "first"],
     {"first": {"before": ["$pre-configure"]}}, {}, ["first", "z"]),
]


@pytest.mark.parametrize(("entries", "order", "own", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_chain_order(entries, order, own, expected):
    assert order_entries(entries, order, lambda name: own.get(name, {})) == expected


def test_ordering_is_deterministic_and_drops_phase_markers():
    entries = ["execute", "m", "directives", "$execute"]
    first = order_entries(entries, STANDARD, lambda name: {})
    assert all(order_entries(entries, STANDARD, lambda name: {}) == first for _ in range(20))
    assert not any(name.startswith("$") for name in first)
