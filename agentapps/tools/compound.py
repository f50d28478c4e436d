"""A view value that stands for several actions at once: the simple commands of one shell line.

A permission pattern on such a value is read per action. A trust rule (or a `$deny` pattern) fires
when it matches ANY of them; a grant admits the value only when it matches EVERY one. A value with
a `problem` (a command line that cannot be reduced to plain words) fires every rule and is admitted
by no constraint. It serialises as a JSON array of its actions, which is what an approval shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Self


class Compound(tuple[str, ...]):
    """The actions (normalised simple commands) of one argument, and why it cannot be reduced."""

    problem: str | None

    def __new__(cls, actions: tuple[str, ...] | list[str], problem: str | None = None) -> Self:
        made = super().__new__(cls, actions)
        made.problem = problem
        return made

    def __repr__(self) -> str:
        return f"Compound({list(self)!r}, problem={self.problem!r})"


def one_by_one(args: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The call as one view per action when an argument stands for several that can all be reduced
    (a grant must then admit each, by any of its patterns); None otherwise."""
    for key, value in args.items():
        if isinstance(value, Compound) and value.problem is None and len(value) > 1:
            return [{**args, key: Compound((one,))} for one in value]
    return None


def unreduced(constraints: Iterable[tuple[str, str]], args: Mapping[str, Any]) -> str:
    """Why a rule with these constraints fired on a value that cannot be reduced ("" if none)."""
    for key, _ in constraints:
        value = args.get(key)
        if isinstance(value, Compound) and value.problem is not None:
            return f" (argument '{key}' cannot be reduced to plain commands: {value.problem})"
    return ""
