"""`agentapps compile NAME ...`: run the `skill-compile` skill (shadowable) and render its report,
one line per skill (`--json`: the report). Exit 0 when every skill compiled or was up to date, 1
when one failed to compile, 2 for bad input (an unknown or code skill, no tests, a hand-written
file in the way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentapps.cli import render
from agentapps.errors import SkillError

STATUSES = frozenset({"compiled", "skipped", "failed"})


def compile_command(names: list[str], *, model: str | None, replay: Path | None, as_json: bool) -> int:
    from agentapps.boot import bootstrap
    from agentapps.cli.streams import redacted_output
    from agentapps.cli.supervise import run_supervised
    from agentapps.context.manager import invoke_root
    from agentapps.lifecycle.served import register_secrets

    overrides: dict[str, Any] = {}
    if model:
        overrides["model"] = model
    if replay is not None:
        overrides["replay"] = str(replay.resolve())
    root = bootstrap(overrides=overrides)
    g = root.globals
    register_secrets(g)
    tool = g.lookup.resolve("skill-compile")
    with redacted_output(g.internals.redactor, verbose=False):  # a skill's prints go to stderr
        found = run_supervised(invoke_root(root, tool, {"ref": list(names)}), g, None, loop=tool.loop)
        report = _checked(found, tool.path)
        if as_json:
            render.emit_json(report, g.internals)
        else:
            render.out().write(str(report["text"]).rstrip("\n") + "\n")
    return 1 if any(r["status"] == "failed" for r in report["results"]) else 0


def _checked(report: Any, path: Path | None) -> dict[str, Any]:
    """The report of a `skill-compile` (a shadowing one's too) has the shape this command renders."""
    ok = isinstance(report, dict) and isinstance(report.get("results"), list) and isinstance(report.get("text"), str)
    ok = ok and all(isinstance(r, dict) and r.get("status") in STATUSES for r in report["results"])
    if not ok:
        raise SkillError("skill-compile returned a report 'agentapps compile' cannot read (it needs {results: "
                         "[{status: compiled|skipped|failed, ...}], text} as docs/toolchain.md describes).",
                         skill="skill-compile", file=path)
    return dict(report)
