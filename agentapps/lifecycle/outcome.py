"""The outcome of a run: the object `run --json` prints, `serve` answers and streams as its last
event, and the run log keeps the gist of. Made and redacted once, whatever the door."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agentapps.lifecycle import failure
from agentapps.runlog.slots import AGENT_TOTALS

if TYPE_CHECKING:
    from agentapps.runstate import Internals

AGENT_KEYS = ("usage", "cost", "models", "turns", "steps", "stop_reason")


def agent_extras(totals: Any) -> dict[str, Any]:
    """`run --json`'s keys for agent runs: usage, cost (null without a known price), per model,
    turns and steps over every agent run of the run, and the outermost one's stop reason."""
    if not isinstance(totals, dict):
        return {}
    return {key: totals.get(key) for key in AGENT_KEYS}


def outcome(skill: str | None, result: Any, error: BaseException | None, *, started: float,
            internals: Internals, **extra: Any) -> dict[str, Any]:
    """{ok, skill, result, error, duration_ms, usage, cost, ...}, redacted. `started` is the run's
    perf_counter start; `extra` adds a door's own keys (serve's threadId)."""
    body: dict[str, Any] = {
        "ok": error is None, "skill": skill, "result": result,
        "error": None if error is None else failure.record(error, internals.redactor, skill=skill),
        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        **agent_extras(internals.get(AGENT_TOTALS)), **extra}
    redacted: dict[str, Any] = internals.redactor.redact_data(body)
    return redacted
