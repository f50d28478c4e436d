"""`$inherit`: parents exist and linearise without a cycle; then the cascaded metadata the body rules read."""

from __future__ import annotations

from agentapps.cascade.resolve import Cascaded, cascade, inherit_chain, parents_of
from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.errors import AgentAppsError, ConfigError
from agentapps.tools.names import did_you_mean
from agentapps.types import ToolDef

KEY = ["metadata", "$inherit"]


class _MissingParent(ConfigError):
    """A name in an $inherit chain that no skill has."""


def _chain_problem(site: Site) -> Finding | None:
    """Walk the $inherit graph the way the cascade does, classifying what stops it."""
    tool, lookup = site.tool, site.scope.lookup

    def find(name: str, child: str) -> ToolDef:
        if name not in site.scope.names():
            raise _MissingParent(f"Skill '{child}' inherits from '{name}', which does not exist."
                                 f"{did_you_mean(name, site.scope.names())}")
        return lookup.find(name)

    try:
        if parents_of(tool.metadata):
            inherit_chain(tool, find, site.scope.main)
    except _MissingParent as exc:
        return site.at(KEY, "error", "inherit-missing", exc.message)
    except ConfigError as exc:
        code = "inherit-cycle" if exc.message.startswith("$inherit cycle") else "inherit-invalid"
        return site.at(KEY, "error", code, exc.message)
    except AgentAppsError:
        return None  # a parent that cannot be loaded is reported at its own file
    return None


def inherit(site: Site) -> list[Finding]:
    problem = _chain_problem(site)
    return [] if problem is None else [problem]


def cascaded(site: Site) -> Cascaded | None:
    """The skill's effective metadata (authority, $inherit chain, default) and the skills that
    contributed it, as a run computes them."""
    scope = site.scope
    try:
        return cascade(site.tool, scope.lookup, scope.main, scope.project)
    except AgentAppsError:
        return None  # a broken chain is reported by `inherit`, broken files at their own paths
