"""Run every rule over every checked skill and collect one Report (no skill runs, no model is called)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentapps.check import allowed, body, inherit, keys, mcp, roots, schemas, settings
from agentapps.check.findings import Finding, Report
from agentapps.check.scope import Scope, Site, build_scope
from agentapps.tools.locate import KeyLines
from agentapps.types import ToolDef


class _Memos:
    """Results shared across skills: many skills repeat the same schemas, patterns and settings."""

    def __init__(self) -> None:
        self.schemas: dict[str, schemas.Problem | None] = {}
        self.patterns = allowed.PatternMemo()
        self.settings = settings.SettingsMemo()


def _check_skill(site: Site, memos: _Memos) -> list[Finding]:
    found = keys.unknown_keys(site) + keys.named_like_a_key(site) + keys.name_differs_from_file(site)
    found += keys.applies_if(site)
    found += schemas.schemas(site, memos.schemas)
    found += allowed.allowed_tools(site, memos.patterns)
    found += allowed.trust_rules(site, memos.patterns)
    found += mcp.declarations(site)
    found += roots.shadowing(site)
    found += settings.merge_strategies(site) + settings.schedule(site)
    chain = inherit.inherit(site)
    found += chain
    cascaded = None if chain else inherit.cascaded(site)
    if cascaded is None:
        return found
    settings.settings(site, cascaded, memos.settings)
    if site.tool.kind == "markdown":
        meta = cascaded.meta
        found += body.template(site, meta)
        directives = body.directives_of(site, meta)
        found += body.directives(site, directives)
        found += body.env_declared(site, meta, directives)
    return found


def check_scope(scope: Scope) -> Report:
    report = Report()
    items = scope.items()
    report.skills = len(items)
    report.findings += roots.load_errors(scope)
    report.findings += roots.duplicates(scope)
    memos = _Memos()
    for item in items:
        if isinstance(item, ToolDef):
            report.findings += _check_skill(Site(item, scope, KeyLines(item.path)), memos)
    report.findings += memos.settings.findings()
    report.findings = list(dict.fromkeys(report.findings))  # overlapping PATHs find things twice
    return report


def check(cwd: Path, paths: Sequence[Path] = (), *, strict: bool = False) -> Report:
    """Check `paths` (or the project's own roots) from `cwd`; `strict` turns warnings into errors."""
    report = check_scope(build_scope(cwd, paths))
    return report.strict() if strict else report
