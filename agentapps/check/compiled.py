"""A skill `agentapps compile` wrote (`.agent-apps/compiled/`) whose markdown source has changed
since, or is gone: it still shadows the source, so `check` warns at the compiled file."""

from __future__ import annotations

from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.tools.compiled import compiled_source, marker_of, source_hash


def stale_compiled(site: Site) -> list[Finding]:
    tool = site.tool
    source = compiled_source(tool)
    if source is None or tool.path is None:
        return []
    recorded = marker_of(tool.path)
    if recorded is None:
        return []  # adopted by hand (the marker line deleted): the file is the user's own code
    if not source.is_file():
        why = f"its source {site.scope.shown(source)} no longer exists; delete it or restore the source"
    elif recorded != source_hash(source):
        why = (f"{site.scope.shown(source)} changed since it was compiled; compile again with "
               f"'agentapps compile {tool.name}' (or delete the compiled file to run the source)")
    else:
        return []
    return [site.at_line(1, "warning", "stale-compiled",
                         f"Compiled skill '{tool.name}' still shadows its source, but {why}.")]
