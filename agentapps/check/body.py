"""Markdown bodies: the Jinja2 template compiles, directives name skills that serve them, `:env[]` is declared."""

from __future__ import annotations

import re
from typing import Any

from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.directives.expand import check_directive
from agentapps.directives.scanner import Directive, find
from agentapps.directives.template import ENGINES, environment
from agentapps.errors import ConfigError, SkillLoadError

_MAYBE_DIRECTIVE = re.compile(r":[a-z][a-z0-9-]*\[")  # cheap test before the markdown scanner runs
ENV_DIRECTIVE = "env"


def template(site: Site, meta: dict[str, Any]) -> list[Finding]:
    """With `metadata.template: jinja2` the body must compile, as the run would render it."""
    tool, engine = site.tool, meta.get("template")
    if engine is None or engine is False:
        return []
    if engine not in ENGINES:
        message = (f"Skill '{tool.name}' sets `template: {engine}`; the only template engine is "
                   f"{', '.join(ENGINES)}.")
        return [site.at(["metadata", "template"], "error", "template-error", message)]
    from jinja2 import DictLoader, TemplateSyntaxError

    try:
        environment(loader=DictLoader({})).compile(tool.body)
    except TemplateSyntaxError as exc:
        line = tool.body_line + (exc.lineno or 1) - 1
        message = f"Template of skill '{tool.name}' has a syntax error: {(exc.message or '').rstrip('.')}."
        return [site.at_line(line, "error", "template-error", message)]
    return []


def directives_of(site: Site, meta: dict[str, Any]) -> list[Directive]:
    """The body's directives, when the directives middleware is in this skill's chain."""
    body = site.tool.body
    if meta.get("directives") in (None, False) or not _MAYBE_DIRECTIVE.search(body):
        return []
    return find(body, first_line=site.tool.body_line)


def directives(site: Site, found: list[Directive]) -> list[Finding]:
    """Each directive name, at its first use, must be a skill that can serve directives."""
    first_use: dict[str, Directive] = {}
    for directive in found:
        first_use.setdefault(directive.name, directive)
    problems: list[Finding] = []
    for name, directive in first_use.items():
        known = name in site.scope.names()
        try:
            check_directive(site.scope.lookup, directive, site.tool)  # the run's own check
        except SkillLoadError as exc:
            if not known:  # a known name that fails to load is reported at its own file
                problems.append(site.at_line(directive.line, "error", "unknown-directive", exc.message))
        except ConfigError as exc:
            problems.append(site.at_line(directive.line, "error", "not-a-directive", exc.message))
    return problems


def env_declared(site: Site, meta: dict[str, Any], found: list[Directive]) -> list[Finding]:
    """`:env[VAR]` reads only variables listed in the (cascaded) `metadata.env`."""
    declared = meta.get("env") or []
    names = {str(d) for d in (declared if isinstance(declared, list) else [declared])}
    problems: list[Finding] = []
    reported: set[str] = set()
    for directive in found:
        var = directive.label.strip()
        if directive.name != ENV_DIRECTIVE or var in names or var in reported:
            continue
        reported.add(var)
        message = (f"Skill '{site.tool.name}' reads :env[{var}] but does not declare '{var}': "
                   "list it in the skill's `metadata.env`.")
        problems.append(site.at_line(directive.line, "error", "undeclared-env", message))
    return problems
