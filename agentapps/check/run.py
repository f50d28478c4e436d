"""Run every rule over every checked skill and collect one Report (no skill runs, no model is called)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from agentapps.boot import find_project
from agentapps.check import (
    allowed,
    body,
    compiled,
    inherit,
    keys,
    mcp,
    roots,
    schemas,
    settings,
    tests,
)
from agentapps.check.cache import CheckCache, open_cache
from agentapps.check.findings import Finding, Nested, Report
from agentapps.check.nested import nested_projects
from agentapps.check.scope import Scope, Site, build_scope
from agentapps.core.gcpause import collector_paused
from agentapps.tools.index import Broken
from agentapps.tools.locate import KeyLines
from agentapps.tools.lookup import EVERYTHING
from agentapps.types import ToolDef


class _Memos:
    """Results shared across skills: many skills repeat the same schemas, patterns and settings."""

    def __init__(self) -> None:
        self.schemas: dict[str, schemas.Problem | None] = {}
        self.patterns = allowed.PatternMemo()
        self.settings = settings.SettingsMemo()


def _check_skill(site: Site, memos: _Memos) -> list[Finding]:
    found = keys.unknown_keys(site) + keys.named_like_a_key(site) + keys.name_differs_from_file(site)
    found += keys.applies_if(site) + keys.dollar_keys(site) + keys.misplaced_model_keys(site)
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


def _check_or_reuse(tool: ToolDef, file: str, scope: Scope, memos: _Memos, cache: CheckCache | None) -> list[Finding]:
    """The findings of one skill: kept ones when nothing they depend on changed (agentapps.check.cache),
    else checked now (and kept). Its test cases are judged every time: they live in files of their
    own (the tests file, recorded scripts) that the cache does not watch, and so is a compiled
    skill's source (stale-compiled)."""
    site = Site(tool, scope, KeyLines(tool.path))
    own_tests = tests.tests(site, file) + compiled.stale_compiled(site)
    kept = cache.get(tool, file) if cache is not None else None
    if kept is not None:
        found, adds = kept
        for finding, skill, own in adds:
            memos.settings.add(finding, skill, own)
        return found + own_tests
    lookup = scope.lookup
    lookup.reads, memos.settings.log = set(), []
    if tool.metadata.get("mcp"):  # its check reads the server's cached tool list
        lookup.reads.add(EVERYTHING)
    try:
        found = _check_skill(Site(tool, scope, KeyLines(tool.path)), memos)
        reads, adds = lookup.reads, memos.settings.log
    finally:
        lookup.reads, memos.settings.log = None, None
    if cache is not None:
        cache.put(tool, reads, found, adds)
    return found + own_tests


def check_scope(scope: Scope, cache: CheckCache | None = None) -> Report:
    report = Report()
    items = scope.items()
    report.skills = len(items)
    report.findings += roots.load_errors(scope)
    report.findings += roots.duplicates(scope)
    memos = _Memos()
    for file, item in zip(scope.paths(), items, strict=True):
        if isinstance(item, ToolDef):
            report.findings += _check_or_reuse(item, file, scope, memos, cache)
    if cache is not None:
        cache.save()
        report.reused = cache.hits
    report.findings += memos.settings.findings()
    report.findings = list(dict.fromkeys(report.findings))  # overlapping PATHs find things twice
    return report


def check(cwd: Path, paths: Sequence[Path] = (), *, strict: bool = False) -> Report:
    """Check `paths` (or the project's own roots) from `cwd`, and every project nested in a checked
    folder under its own main skill; a given path that holds no skill at all is a warning.
    `strict` turns warnings into errors."""
    with collector_paused():  # tens of thousands of definitions, findings and rows, and no cycle
        return _check(cwd, paths, strict=strict)


def _check(cwd: Path, paths: Sequence[Path], *, strict: bool) -> Report:
    cwd = cwd.resolve()
    scope = build_scope(cwd, paths)
    report = check_scope(scope, open_cache(scope, paths))
    if not paths:  # checking the project: what the user's own folders change in it
        report.findings += roots.user_shadowing(scope)
    folders = [index.entry.directory for index in scope.roots if index.entry.kind == "project"]
    held = {folder: 0 for folder in folders}
    for folder in folders:
        held[folder] += sum(1 for item in index_items(scope, folder))
        for project in nested_projects(folder):
            inner = check(project)
            shown = scope.shown(project)
            report.findings += [replace(f, path=scope.shown(project / f.path)) for f in inner.findings]
            report.nested += [Nested(shown, inner.skills - sum(n.skills for n in inner.nested),
                                     inner_main(project)), *_moved(inner.nested, project, scope)]
            report.skills += inner.skills
            held[folder] += inner.skills
    for raw in paths:
        folder = (cwd / raw).resolve()
        if held.get(folder) == 0:
            message = f"'{raw}' holds no skill files (nothing was checked there)."
            report.findings.append(Finding(scope.shown(folder), 0, "warning", "no-skills", message))
    report.findings = list(dict.fromkeys(report.findings))
    return report.strict() if strict else report


def index_items(scope: Scope, folder: Path) -> list[ToolDef | Broken]:
    """The checked files of the root at `folder`."""
    return [i for index in scope.roots if index.entry.directory == folder for i in index.items()]


def inner_main(project: Path) -> str | None:
    _, main = find_project(project)
    return main.name if main is not None else None


def _moved(nested: list[Nested], project: Path, scope: Scope) -> list[Nested]:
    """Nested projects of a nested project, their paths shown from the outer check's folder."""
    return [replace(n, path=scope.shown(project / n.path)) for n in nested]
