"""`agentapps test [SKILL|PATH ...]`: run the `skill-test` skill (shadowable) and render its report:
one line per case, a summary, `--json`, `--junit FILE`. Exit 0 when every case passed, 1 when one
failed, 2 for bad input (a flag, a tests file, a target that names no tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentapps.cli import render
from agentapps.errors import SkillError, UsageError


def test_command(targets: list[str], *, jobs: int, junit: Path | None, record: bool, model: str | None,
                 as_json: bool, quiet: bool = False) -> int:
    from agentapps.boot import bootstrap
    from agentapps.cli.streams import redacted_output
    from agentapps.cli.supervise import run_supervised
    from agentapps.context.manager import invoke_root
    from agentapps.lifecycle.served import register_secrets
    from agentapps.skilltest import report as reports

    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {jobs}.")
    if model is not None and not record:
        raise UsageError("--model chooses the model to record from: use it with --record.")
    root = bootstrap()
    g = root.globals
    register_secrets(g)
    args: dict[str, Any] = {"targets": list(targets), "jobs": jobs, "record": record}
    if model is not None:
        args["model"] = model
    tool = g.lookup.resolve("skill-test")
    with redacted_output(g.internals.redactor, verbose=False):  # a skill's prints go to stderr
        found = run_supervised(invoke_root(root, tool, args), g, None, loop=tool.loop)
        report = _checked(found, tool.path)
        if junit is not None:
            _write_junit(junit, reports.junit(report))
        if as_json:
            render.emit_json(report, g.internals)
        else:
            out = render.out()
            for case in report["cases"]:
                if not quiet or case["status"] != "passed":
                    out.write(reports.case_line(case))
            out.write(reports.summary_line(report))
    return reports.exit_code(report)


def _checked(report: Any, path: Path | None) -> dict[str, Any]:
    """The report of a `skill-test` (a shadowing one's too) has the shape this command renders."""
    ok = isinstance(report, dict) and isinstance(report.get("cases"), list) \
        and isinstance(report.get("summary"), dict) and "ok" in report["summary"]
    ok = ok and all(isinstance(c, dict) and {"skill", "case", "file", "line", "status", "duration_ms"} <= c.keys()
                    for c in report["cases"])
    if not ok:
        raise SkillError("skill-test returned a report 'agentapps test' cannot read (it needs {cases: [...], "
                         "summary: {...}} as docs/toolchain.md describes).", skill="skill-test", file=path)
    return dict(report)


def _write_junit(path: Path, body: bytes) -> None:
    from agentapps.core.atomic import write_atomic
    from agentapps.errors import StoreWriteError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, body, mode=0o644)
    except OSError as exc:
        raise StoreWriteError(f"Cannot write the JUnit report: {exc.strerror or exc}.", file=path) from None
