"""A view value that stands for several actions at once: the simple commands of one shell line.

A permission pattern on such a value is read per action. A trust rule (or a `$deny` pattern) fires
when it matches ANY of them; a grant admits the value only when it matches EVERY one. A value with
a `problem` (a command line that cannot be reduced to plain words) fires every rule and is admitted
by no constraint. It serialises as a JSON array of its actions, which is what an approval shows.
"""

from __future__ import annotations

from typing import Self


class Compound(tuple[str, ...]):
    """The actions (normalised simple commands) of one argument, and why it cannot be reduced."""

    problem: str | None

    def __new__(cls, actions: tuple[str, ...] | list[str], problem: str | None = None) -> Self:
        made = super().__new__(cls, actions)
        made.problem = problem
        return made

    def __repr__(self) -> str:
        return f"Compound({list(self)!r}, problem={self.problem!r})"
