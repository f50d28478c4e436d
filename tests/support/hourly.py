"""An hourly schedule for tests of missed times, due at the minute half an hour from now, so that
no new due time comes while a test runs (a test at 05:00:00 once saw one more run than it made)."""

from __future__ import annotations

import time

HOUR, MINUTE = 3600, 60


def hourly_missed(times: int, now: float | None = None) -> tuple[str, float, float]:
    """(cron, made at, last due time): made a little more than `times` hours before its last due
    time, so that `times` due times have passed, the last one under an hour ago."""
    now = time.time() if now is None else now
    at = int(now // MINUTE + 30) % 60
    last = (now // HOUR) * HOUR + at * MINUTE
    if last > now:
        last -= HOUR
    return f"{at} * * * *", last - times * HOUR + 1, last
