"""Cron expressions for `metadata.schedule`, in UTC, read by the `cronsim` library: five fields
(minute hour day month weekday), or six with seconds first. Fields take `*`, numbers, `a-b`, `a,b`,
`*/n`, `a-b/n`, names for months (`jan`) and weekdays (`sun`; 0 and 7 are Sunday), and cronsim's
`L` (last day), `LW` (last weekday of the month) and `mon#2` (second Monday). As in Vixie cron,
when neither day of month nor weekday starts with `*`, a time matches either; otherwise both.

Why cronsim (issue 20): croniter 7.0.0 was checked first and gave wrong times (a one-value month
range such as `5-5` or `10-10/2` was ignored: `11 * * 5-5 0` fired in January); cronsim agreed
with the parser this module used to hold on 5,000 random expressions, apart from its two
differences below. It is pure Python with no dependencies, typed, and never searches more than
50 years. Our own code here only does what cronsim does differently from Vixie cron:

- `a-a/n` is the one value `a` in Vixie cron; cronsim reads it as `a/n` (`a` up to the end of the
  field), so the range is written as its one value before cronsim sees it.
- An expression that never matches raises at parse time when cronsim can tell (`0 0 30 2 *`), and
  otherwise ends the search after 50 years: `next_after` then answers None.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from cronsim import CronSim, CronSimError

from agentapps.errors import ConfigError

# `9-9/3`, `mon-mon/2`: a range of one value with a step (cronsim would read `9/3`)
_ONE_VALUE_RANGE = re.compile(r"(?<![^\s,])(\w+)-\1/[1-9][0-9]*(?![^\s,])", re.ASCII)


def _vixie(text: str) -> str:
    return _ONE_VALUE_RANGE.sub(r"\1", text)


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression (`text` as written); `next_after` finds the times it fires."""

    text: str
    _expression: str = field(repr=False, compare=False)

    @classmethod
    def parse(cls, text: str, *, skill: str = "") -> Cron:
        expression = _vixie(str(text))
        try:
            if len(expression.split()) not in (5, 6):
                raise CronSimError("wrong number of fields")
            CronSim(expression, dt.datetime.now(dt.UTC))
        except CronSimError as exc:
            raise ConfigError(
                f"Skill '{skill}' has an invalid `schedule` {text!r} ({str(exc).lower()}): use cron syntax, five fields "
                "(minute hour day month weekday, e.g. '0 9 * * mon-fri') or six with seconds first.",
                skill=skill or None) from None
        return cls(str(text), expression)

    def next_after(self, after: float) -> float | None:
        """The first matching whole second after `after` (epoch seconds), or None when nothing
        matches within 50 years."""
        start = dt.datetime.fromtimestamp(int(after), dt.UTC)
        try:
            return next(CronSim(self._expression, start)).timestamp()
        except StopIteration:
            return None
