"""A project's spending caps per calendar period (`model.budget: {daily: USD, monthly: USD}`).

Before each model call the agent adds what the run log has recorded since the period began (local
midnight, or the first of the month, in the machine's time zone) to what this run has spent and
not yet recorded, and the estimated next turn; past a cap, the run stops with exit 4. The run log
is shared by every process of the project, so a cap holds across processes: a run recorded by one
stops the next run of another. Runs still going in other processes count once they are recorded
(a server batches its records for at most 50 ms). The caps are the main skill's `model.budget`
and, tighter if it says so, the running skill's own. Under a cap, prices are the project's: the
main skill's `model.pricing` and the built-in table, never a skill's own (a skill that priced its
model at zero would spend past the cap unseen).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentapps.errors import ConfigError, LimitError

PERIODS = ("daily", "monthly")


def caps_of(value: Any, skill: str) -> dict[str, float]:
    """`model.budget` as {period: USD}, or a ConfigError naming the setting."""
    if value is None or value is False:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"Skill '{skill}' model.budget must be a mapping such as {{daily: 5.00, monthly: 100}} "
                          f"(US dollars), not {value!r:.60}.", skill=skill, setting=("model", "budget"))
    out: dict[str, float] = {}
    for period, cap in value.items():
        if period not in PERIODS:
            raise ConfigError(f"Skill '{skill}' model.budget.{period} is not a period: use daily or monthly.",
                              skill=skill, setting=("model", "budget", str(period)))
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 <= cap < math.inf:
            raise ConfigError(f"Skill '{skill}' model.budget.{period} must be a number of US dollars >= 0, "
                              f"not {cap!r}.", skill=skill, setting=("model", "budget", period))
        out[period] = float(cap)
    return out


def tighter(*caps: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for each in caps:
        for period, cap in each.items():
            out[period] = min(cap, out.get(period, math.inf))
    return out


def period_start(period: str, now: datetime | None = None) -> float:
    """When the current day or month began, local time, as epoch seconds."""
    now = datetime.now().astimezone() if now is None else now
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return (day if period == "daily" else day.replace(day=1)).timestamp()


@dataclass(frozen=True)
class PeriodBudget:
    """The caps one agent run keeps, and the run log they are counted in."""

    caps: dict[str, float]
    log: Path

    def admit(self, unrecorded: float, more: float, *, skill: str, number: int) -> None:
        """Raise LimitError when `unrecorded` (this run's spending so far) and `more` (the next
        turn's estimate), on top of what the run log holds for a period, pass its cap."""
        from agentapps.runlog.query import cost_since

        for period, cap in self.caps.items():
            recorded = cost_since(self.log, period_start(period))
            if recorded + unrecorded + more > cap:
                when = "today" if period == "daily" else "this month"
                raise LimitError(
                    f"The agent for '{skill}' stopped before turn {number}: model.budget.{period} is "
                    f"${cap:g}, ${recorded + unrecorded:.4f} was spent {when} (the run log, and this run), and "
                    f"the next turn would take about ${more:.4f} more. Raise the budget, or wait for the "
                    f"next {'day' if period == 'daily' else 'month'}.", skill=skill)


def period_budget(config: Mapping[str, Any], main_model: Any, skill: str, log_dir: Path,
                  environ: Mapping[str, str] | None = None) -> PeriodBudget | None:
    """The caps of one agent run: the main skill's `model.budget` (`main_model` is its `model`)
    and the run's own, tighter; None when neither sets one. They are kept in the run log, so a
    run log switched off (AGENTAPPS_RUN_LOG=off) refuses the run rather than ignore them."""
    from agentapps.runlog import enabled, log_path

    project = main_model.get("budget") if isinstance(main_model, Mapping) else None
    caps = tighter(caps_of(project, skill), caps_of(config.get("budget"), skill))
    if not caps:
        return None
    if not enabled(dict(environ) if environ is not None else None):
        raise ConfigError(f"Skill '{skill}' runs under model.budget, which is kept in the run log, but "
                          "AGENTAPPS_RUN_LOG is off: turn the run log on or drop model.budget.", skill=skill,
                          setting=("model", "budget"))
    return PeriodBudget(caps, log_path(log_dir))


def project_priced(config: Mapping[str, Any], main_model: Any) -> dict[str, Any]:
    """`config` with the main skill's `model.pricing` in place of the skill's own (see the module doc)."""
    out = {k: v for k, v in config.items() if k != "pricing"}
    pricing = main_model.get("pricing") if isinstance(main_model, Mapping) else None
    if pricing is not None:
        out["pricing"] = pricing
    return out
