"""`run_skill_tests`: what the `skill-test` skill does (collect, run, report as data)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
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
    {cases: [{skill, case, file, line, status, reason, diff, duration_ms, recorded}], summary}.
    Files are shown relative to the working directory when they are inside it."""
    started = time.perf_counter()
    cwd = g.config.cwd
    suites = collect(cwd, list(targets), g.lookup)
    results = await run_suites(suites, jobs=jobs, record=record, model=model)
    for result in results:
        result.tests_file = _shown(Path(result.tests_file), cwd)
        if result.recorded:
            result.recorded = _shown(Path(result.recorded), cwd)
    out = report.to_dict(results)
    out["summary"]["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)  # wall time
    return out


def _shown(path: Path, cwd: Path) -> str:
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)
