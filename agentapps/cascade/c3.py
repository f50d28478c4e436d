"""C3 linearisation for `$inherit` lists (the order Python uses for classes)."""

from __future__ import annotations

from collections.abc import Callable

from agentapps.errors import ConfigError


def linearize(name: str, parents_of: Callable[[str], list[str]], _stack: tuple[str, ...] = ()) -> list[str]:
    """Return [name, ...ancestors] in C3 order; a cycle or an inconsistent order is a ConfigError."""
    if name in _stack:
        cycle = " -> ".join((*_stack[_stack.index(name) :], name))
        raise ConfigError(f"$inherit cycle: {cycle}. Remove one of these links.", skill=name)
    stack = (*_stack, name)
    parents = parents_of(name)
    sequences = [linearize(p, parents_of, stack) for p in parents] + [list(parents)]
    result = [name]
    while True:
        sequences = [s for s in sequences if s]
        if not sequences:
            return result
        for seq in sequences:
            head = seq[0]
            if not any(head in s[1:] for s in sequences):
                break
        else:
            raise ConfigError(
                f"Skill '{name}' has an $inherit order that cannot be linearised: {parents}.", skill=name
            )
        result.append(head)
        for seq in sequences:
            if seq[0] == head:
                del seq[0]
