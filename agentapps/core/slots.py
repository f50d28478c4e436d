"""Subsystem state in a run's internals: each subsystem declares its own `Slot`, once, in its own
package (`agentapps/<package>/slots.py`), and reads it with `internals.get(SLOT)`.

    EVENT_BUS: Slot[EventBus | None] = Slot("events.bus", lambda: None)
    AGENT_TOTALS: Slot[dict[str, Any] | None] = Slot("agent.totals", lambda: None, per_run=True)

A slot says how its value starts (`start`, called the first time a run reads the slot) and whether
it belongs to one run (`per_run=True`: a run a server serves starts its own) or to the whole
process (the default: a served run shares the server's). `SlotValues` keeps the values; the
kernel's `Internals` is one. Nothing else needs to know that a subsystem exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Slot(Generic[T]):
    """One subsystem's state: its name (for `repr`), how it starts, and per run or shared."""

    __slots__ = ("name", "per_run", "start")
    name: str
    start: Callable[[], T]
    per_run: bool

    def __init__(self, name: str, start: Callable[[], T], *, per_run: bool = False) -> None:
        self.name, self.start, self.per_run = name, start, per_run

    def __repr__(self) -> str:
        return f"Slot({self.name!r}, per_run={self.per_run})"


class SlotValues:
    """The slots' values: per-run slots in `_run`, the others in `_shared`. `served()` gives one
    served run a fresh `_run` and the same `_shared`, so the per-run flag alone decides which is which."""

    __slots__ = ("_run", "_shared")
    _run: dict[Slot[Any], Any]
    _shared: dict[Slot[Any], Any]

    def __init__(self, shared: dict[Slot[Any], Any] | None = None) -> None:
        self._run = {}
        self._shared = {} if shared is None else shared

    def get(self, slot: Slot[T]) -> T:
        """The slot's value, started the first time it is read."""
        values = self._run if slot.per_run else self._shared
        try:
            found: T = values[slot]
        except KeyError:
            found = values[slot] = slot.start()
        return found

    def set(self, slot: Slot[T], value: T) -> None:
        (self._run if slot.per_run else self._shared)[slot] = value

    def slot_values(self) -> dict[str, Any]:
        """Every slot read or set so far, by name (shared ones first): for `repr` and debugging."""
        return {slot.name: value for values in (self._shared, self._run) for slot, value in values.items()}
