"""Judging one case's outcome against its expectations: the exit kind, the error text, the exact
result (with a diff), a JSON Schema, a predicate skill."""

from __future__ import annotations

import json
from typing import Any

from agentapps.errors import AgentAppsError, ReturnsError
from agentapps.schemas.plain import json_equal
from agentapps.tools.testfile import ABSENT, Case

MAX_DIFF_LINES = 40


def exit_problem(case: Case, error: BaseException | None, record: dict[str, Any] | None) -> str | None:
    """Why the way the run ended is not the expected one (None: it is)."""
    want = case.exit
    if error is None or record is None:
        if want in ("ok", 0):
            return None
        return f"expected exit {want}, but the skill succeeded"
    got = f"{record['type']} (exit {record['exit_code']}): {record['message']}"
    if want in ("ok", 0):
        return f"expected success, got {got}"
    if isinstance(want, int):
        matched = record["exit_code"] == want
    else:
        matched = want == record["type"] or (isinstance(error, AgentAppsError)
                                             and any(c.__name__ == want for c in type(error).__mro__))
    if not matched:
        return f"expected exit {want}, got {got}"
    if case.error is not None and case.error not in str(record["message"]):
        return f"expected an error containing {case.error!r}, got {got}"
    return None


def result_problem(case: Case, result: Any) -> tuple[str, str] | None:
    """(reason, diff) when the result is not the exact one expected (None: it is, or none is)."""
    if case.result is ABSENT or json_equal(case.result, result):
        return None
    return "the result differs from the expected one", diff(case.result, result)


def diff(expected: Any, actual: Any) -> str:
    import difflib

    def lines(value: Any) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    out = list(difflib.unified_diff(lines(expected), lines(actual), "expected", "actual", lineterm="", n=2))
    if len(out) > MAX_DIFF_LINES:
        out = [*out[:MAX_DIFF_LINES], f"... ({len(out) - MAX_DIFF_LINES} more lines)"]
    return "\n".join(out)


def schema_problem(case: Case, result: Any, cache: dict[Any, Any], skill: str) -> str | None:
    if case.schema is None:
        return None
    from agentapps.schemas.validation import validate

    try:
        validate(result, case.schema, cache, skill=skill, where="expect.schema", error_cls=ReturnsError,
                 file=case.file)
    except ReturnsError as exc:
        return f"the result does not match expect.schema: {exc.message}"
    return None


def predicate_verdict(value: Any, predicate: str) -> str | None:
    """A predicate skill's answer: true or {ok: true} passes; false, text (the reason) or
    {ok: false, reason} fails."""
    if value is True or (isinstance(value, dict) and value.get("ok") is True):
        return None
    if isinstance(value, str) and value:
        return f"predicate '{predicate}' failed: {value}"
    if isinstance(value, dict) and isinstance(value.get("reason"), str):
        return f"predicate '{predicate}' failed: {value['reason']}"
    return f"predicate '{predicate}' failed (it returned {json.dumps(value)[:80]})"

