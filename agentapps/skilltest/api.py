"""`run_skill_tests`: what the `skill-test` skill does (collect, run, report as data)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentapps.skilltest import report
from agentapps.skilltest.collect import collect
from agentapps.skilltest.runner import run_suites

if TYPE_CHECKING:
    from agentapps.context.context import Globals


async def run_skill_tests(g: Globals, targets: Sequence[str] = (), *, jobs: int = 4, record: bool = False,
                          model: str | None = None) -> dict[str, Any]:
    """Run the test cases `targets` name (skill names, skill or tests files, folders; none: every
    tests file of the project found from the working directory) and return the report:
    {cases: [{skill, case, file, line, status, reason, diff, duration_ms, recorded}], summary}."""
    suites = collect(g.config.cwd, list(targets), g.lookup)
    results = await run_suites(suites, jobs=jobs, record=record, model=model)
    return report.to_dict(results)
