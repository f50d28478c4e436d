"""A skill's test cases (`<skill>.tests.yaml`): a tests file that cannot be read is an error at its
line, and a recorded script made for another version of the prompt is a warning on the skill."""

from __future__ import annotations

import os

from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.errors import ConfigError
from agentapps.schemas.validation import schema_problem
from agentapps.tools.testfile import (
    Case,
    load_cases,
    prompt_hash,
    recorded_hash,
    tests_file_for,
    tests_file_name,
)


def tests(site: Site, file: str) -> list[Finding]:
    """`file`: the skill's path as text (str(site.tool.path), already at hand)."""
    tool = site.tool
    if tool.path is None:
        return []
    folder, name = os.path.split(file)
    if not site.scope.has_file(folder, tests_file_name(name)):
        return []
    tests_file = tests_file_for(tool.path)
    try:
        cases = load_cases(tests_file)
    except ConfigError as exc:
        return [Finding(site.scope.shown(tests_file), exc.line or 1, "error", "bad-tests", exc.message)]
    found = [Finding(site.scope.shown(tests_file), case.line, "error", "bad-tests", problem)
             for case in cases for problem in [_unjudgeable(site, case)] if problem is not None]
    current = prompt_hash(tool)
    stale: dict[str, list[str]] = {}  # script -> the cases that play it
    for case in cases:
        if case.script is None or not case.script.is_file():
            continue
        recorded = recorded_hash(case.script)
        if recorded is not None and recorded != current:
            stale.setdefault(site.scope.shown(case.script), []).append(case.name)
    line = tool.body_line if tool.kind == "markdown" else 1
    what = "prompt" if tool.kind == "markdown" else "code"
    return found + [site.at_line(line, "warning", "stale-tests",
                         f"Skill '{tool.name}' {what} changed since {script} was recorded for its "
                         f"test{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)}; record "
                         f"again with 'agentapps test --record {tool.name}' (or update the script by hand).")
            for script, names in sorted(stale.items())]


def _unjudgeable(site: Site, case: Case) -> str | None:
    """Why a case's expectation cannot judge any result: an invalid schema, a predicate no skill answers."""
    if case.schema is not None:
        problem = schema_problem(case.schema)
        if problem is not None:
            return f"Case '{case.name}' has an invalid `expect.schema`: {problem}."
    if case.predicate is not None and case.predicate not in site.scope.names():
        return f"Case '{case.name}' has `expect.predicate: {case.predicate}`, a skill this project does not have."
    return None
