"""Schedules made at run time (`schedule-create`), kept in the project's state store as
`schedule:<id>`: a skill, a cron expression (UTC), its args, and what happens to the times that
passed while no server ran (`catchUp`: `skip` them, run `once` for all of them, or run `each`, at
most MAX_CATCH_UP). `agentapps serve` and `agentapps worker --schedules` run them
(lifecycle/schedules.py); each due time is claimed by moving the schedule's `lastDue` up to it in
the store (`claim`), so exactly one process runs it and the next one started knows what it missed.
With the project's store on Redis, every replica and every process sees the same set.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.core.cron import Cron
from agentapps.errors import ConflictError, UsageError

if TYPE_CHECKING:
    from agentapps.stores.state import StateStore

PREFIX = "schedule:"
CATCH_UP = ("skip", "once", "each")
MAX_CATCH_UP = 100  # missed times `each` runs at the most (the oldest are dropped)
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Schedule:
    """One stored schedule, as `schedule-list` shows it."""

    id: str
    skill: str
    cron: str
    args: dict[str, Any] = field(default_factory=dict)
    catch_up: str = "skip"
    created: float = 0.0
    last_due: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "skill": self.skill, "cron": self.cron, "args": self.args,
                "catchUp": self.catch_up, "createdAt": self.created, "lastDue": self.last_due}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Schedule:
        return cls(str(value["id"]), str(value["skill"]), str(value["cron"]), dict(value.get("args") or {}),
                   str(value.get("catchUp") or "skip"), float(value.get("createdAt") or 0.0),
                   float(value["lastDue"]) if value.get("lastDue") is not None else None)

    def next_due(self, after: float) -> float | None:
        return Cron.parse(self.cron, skill=self.skill).next_after(after)

    def missed(self, now: float) -> list[float]:
        """The due times between the last one run (else the schedule's creation) and `now` that
        this schedule's catch-up policy runs, oldest first."""
        if self.catch_up == "skip":
            return []
        cron = Cron.parse(self.cron, skill=self.skill)
        found: list[float] = []
        due = cron.next_after(self.last_due if self.last_due is not None else self.created)
        while due is not None and due <= now:
            found.append(due)
            found = found[-MAX_CATCH_UP:]
            due = cron.next_after(due)
        return found[-1:] if self.catch_up == "once" else found


def create(store: StateStore, skill: str, cron: str, *, args: dict[str, Any] | None = None,
           catch_up: str = "skip", schedule_id: str | None = None, now: float | None = None) -> Schedule:
    """Keep a new schedule; ConflictError when `schedule_id` is taken."""
    Cron.parse(cron, skill=skill)  # a bad expression is refused here, not at the first tick
    if catch_up not in CATCH_UP:
        raise UsageError(f"catchUp must be one of {', '.join(CATCH_UP)}, not {catch_up!r}.")
    if schedule_id is not None and not _ID.match(schedule_id):
        raise UsageError(f"A schedule id is 1 to 64 lowercase letters, digits, '.', '_' or '-', not {schedule_id!r:.80}.")
    made = Schedule(schedule_id or secrets.token_hex(4), skill, cron, dict(args or {}), catch_up,
                    time.time() if now is None else now)
    try:
        store.set(PREFIX + made.id, made.to_dict(), expect=None)
    except ConflictError:
        raise ConflictError(f"A schedule '{made.id}' exists already: delete it first (schedule-delete) "
                            "or choose another id.") from None
    return made


def listed(store: StateStore) -> list[Schedule]:
    """Every stored schedule, by id; an entry that is not a schedule is left out."""
    out = []
    for key in sorted(store.list(PREFIX)):
        value = store.get(key)
        if isinstance(value, Mapping):
            try:
                out.append(Schedule.from_dict(value))
            except (KeyError, TypeError, ValueError):
                continue
    return out


def delete(store: StateStore, schedule_id: str) -> bool:
    return store.delete(PREFIX + schedule_id)


def claim(store: StateStore, schedule_id: str, due: float) -> bool:
    """Take the due time `due` of a schedule for this process: True when this call moved its
    `lastDue` up to `due` (compare-and-swap, so of every server and worker sharing the store exactly
    one wins each due time, and none runs a time at or before one already run); False when another
    took it first or the schedule was deleted meanwhile (it stays deleted)."""
    for _ in range(10):
        value = store.get(PREFIX + schedule_id)
        if not isinstance(value, Mapping) or float(value.get("lastDue") or 0) >= due:
            return False
        try:
            store.set(PREFIX + schedule_id, {**value, "lastDue": due}, expect=value)
            return True
        except ConflictError:
            continue  # another process wrote it meanwhile: look again
    return False
