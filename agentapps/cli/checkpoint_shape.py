"""The shape a checkpoint must have before `agentapps run --resume` uses it.

A checkpoint is a file in `.agent-apps/checkpoints/` (or a Redis key) that a disk error, a hand
edit or another program can damage. Before a resume trusts one, every field it reads is checked
here, and the runner settings it carries pass the same checks as on the command line (`--timeout`,
`--max-cost`, `--approve`, `--local`): a damaged checkpoint is one line naming the field (exit 8),
never an internal error in the middle of the run.
"""

from __future__ import annotations

from typing import Any

from agentapps.errors import AgentAppsError, NoCheckpointError


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _problem(found: dict[str, Any]) -> str | None:
    """What is wrong with `found` (None: nothing)."""
    for name in ("args", "options", "provider", "memory", "counts", "spend"):
        if not isinstance(found.get(name), dict):
            return f"`{name}` is not an object"
    if not isinstance(found.get("skill"), str) or not found["skill"]:
        return "`skill` is not a skill name"
    for name in ("path", "digest"):
        if found.get(name) is not None and not isinstance(found[name], str):
            return f"`{name}` is not text"
    if not _number(found.get("elapsedMs", 0)) or found.get("elapsedMs", 0) < 0:
        return "`elapsedMs` is not a duration"
    if not _count(found.get("turn")):
        return "`turn` is not a turn number"
    if not _dicts(found.get("messages")):
        return "`messages` is not a list of messages"
    counts, spend = found["counts"], found["spend"]
    for where, block, keys in (("counts", counts, ("turn", "steps")), ("spend", spend, ("turns", "steps"))):
        for key in keys:
            if not _count(block.get(key, 0)):
                return f"`{where}.{key}` is not a count"
    if counts.get("usage") is not None and not isinstance(counts["usage"], dict):
        return "`counts.usage` is not an object"
    if not _dicts(counts.get("turnsUsage", [])):
        return "`counts.turnsUsage` is not a list of objects"
    models = spend.get("models", {})
    if not isinstance(models, dict) or not all(isinstance(m, dict) for m in models.values()):
        return "`spend.models` is not an object of objects"
    if "recording" in found and not _dicts(found["recording"]):
        return "`recording` is not a list of turns"
    return _options_problem(found["options"])


def _options_problem(options: dict[str, Any]) -> str | None:
    """The runner settings, checked as the command line checks them."""
    from agentapps.cli import run_options

    for key in ("model", "replay", "record"):
        if options.get(key) is not None and (not isinstance(options[key], str) or not options[key]):
            return f"`options.{key}` is not text"
    checks = (("timeout", run_options._seconds), ("maxCost", run_options._dollars))
    for key, convert in checks:
        value = options.get(key)
        if value is None:
            continue
        if not _number(value):
            return f"`options.{key}` is not a number"
        try:
            convert(str(value))
        except AgentAppsError as exc:
            return f"`options.{key}`: {exc.message.rstrip('.')}"
    approve = options.get("approve", [])
    if not isinstance(approve, list) or not all(isinstance(a, str) for a in approve):
        return "`options.approve` is not a list of patterns"
    for pattern in approve:
        try:
            run_options._approve_pattern(pattern)
        except AgentAppsError as exc:
            return f"`options.approve`: {exc.message.rstrip('.')}"
    local = options.get("local", [])
    if not _dicts(local) or not all(
            isinstance(o.get("source"), str) and isinstance(o.get("path"), str) and o["path"]
            and isinstance(o.get("text"), bool) and "value" in o for o in local):
        return "`options.local` is not a list of overrides"
    return None


def check(found: dict[str, Any], run_id: int) -> None:
    """Refuse (exit 8) the checkpoint of run `run_id` when a field a resume reads is damaged."""
    problem = _problem(found)
    if problem is not None:
        raise NoCheckpointError(f"Run {run_id}'s checkpoint is damaged ({problem:.200}), so it cannot be "
                                "resumed; run it again.")
