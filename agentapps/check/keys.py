"""Unknown top-level frontmatter keys: kept by the loader (Agent Skills compatibility), warned about here."""

from __future__ import annotations

from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.tools.names import close_names

# Ours, plus the public Agent Skills keys; everything else belongs under `metadata`.
KNOWN_KEYS = ("name", "description", "allowed-tools", "metadata", "license", "compatibility")


def unknown_keys(site: Site) -> list[Finding]:
    found: list[Finding] = []
    for key in site.tool.frontmatter:
        if key in KNOWN_KEYS:
            continue
        close = close_names(str(key), KNOWN_KEYS, limit=1)
        fix = f"did you mean '{close[0]}'?" if close else "move it under `metadata`."
        message = f"Unknown top-level key '{key}' in the frontmatter: {fix}"
        found.append(site.at([str(key)], "warning", "unknown-key", message))
    return found
