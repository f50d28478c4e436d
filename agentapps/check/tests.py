"""A skill's test cases (`<skill>.tests.yaml`): a tests file that cannot be read is an error at its
line, and a recorded script made for another version of the prompt is a warning on the skill."""

from __future__ import annotations

import os

from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.errors import ConfigError
from agentapps.tools.testfile import (
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
    return [site.at_line(line, "warning", "stale-tests",
                         f"Skill '{tool.name}' {what} changed since {script} was recorded for its "
                         f"test{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)}; record "
                         f"again with 'agentapps test --record {tool.name}' (or update the script by hand).")
            for script, names in sorted(stale.items())]
