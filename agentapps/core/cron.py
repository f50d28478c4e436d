"""Cron expressions for `metadata.schedule`, in UTC: five fields (minute hour day month weekday), or
six with seconds first. Fields take `*`, numbers, `a-b`, `a,b`, `*/n`, `a-b/n`, and names for
months (`jan`) and weekdays (`sun`; 0 and 7 are Sunday). As in Vixie cron, when both day of month
and weekday are restricted, a time matches either."""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass

from agentapps.errors import ConfigError

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
DAYS = {d.lower(): (i + 1) % 7 for i, d in enumerate(calendar.day_abbr)}  # mon=1 ... sun=0
# (low, high, names) per field, seconds first
FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = ((0, 59, {}), (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, MONTHS), (0, 7, DAYS))
HORIZON = 366 * 4  # days searched for the next time (29 February needs up to four years)


def _value(text: str, names: dict[str, int], low: int, high: int) -> int:
    number = names.get(text.lower()) if not text.isdigit() else int(text)
    if number is None or not low <= number <= high:
        raise ValueError(text)
    return number


def _field(text: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1 or (step_text and not step_text.isdigit()):
            raise ValueError(part)
        if span == "*":
            first, last = low, high
        elif "-" in span:
            a, b = span.split("-", 1)
            first, last = _value(a, names, low, high), _value(b, names, low, high)
            if first > last:
                raise ValueError(part)
        else:
            first = _value(span, names, low, high)
            last = high if step_text else first
        values.update(range(first, last + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression: the seconds, minutes, hours, days, months and weekdays it fires."""

    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool

    @classmethod
    def parse(cls, text: str, *, skill: str = "") -> Cron:
        parts = str(text).split()
        if len(parts) == 5:
            parts = ["0", *parts]
        try:
            if len(parts) != 6:
                raise ValueError(text)
            sets = [_field(p, low, high, names) for p, (low, high, names) in zip(parts, FIELDS, strict=True)]
        except ValueError:
            raise ConfigError(
                f"Skill '{skill}' has an invalid `schedule` {text!r}: use cron syntax, five fields "
                "(minute hour day month weekday, e.g. '0 9 * * mon-fri') or six with seconds first.",
                skill=skill or None) from None
        seconds, minutes, hours, days, months, weekdays = sets
        return cls(str(text), seconds, minutes, hours, days, months, frozenset(d % 7 for d in weekdays),
                   parts[3] == "*", parts[5] == "*")

    def _day(self, t: time.struct_time) -> bool:
        if t.tm_mon not in self.months:
            return False
        in_month, in_week = t.tm_mday in self.days, (t.tm_wday + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week

    def next_after(self, after: float) -> float | None:
        """The first matching whole second after `after` (epoch seconds), or None within the horizon."""
        at = int(after) + 1
        stop = at + HORIZON * 86400
        while at < stop:
            t = time.gmtime(at)
            if not self._day(t):
                at += 86400 - (at % 86400)
            elif t.tm_hour not in self.hours:
                at += 3600 - (at % 3600)
            elif t.tm_min not in self.minutes:
                at += 60 - (at % 60)
            else:
                later = [s for s in self.seconds if s >= t.tm_sec]
                if later:
                    return float(at + min(later) - t.tm_sec)
                at += 60 - (at % 60)
        return None
