"""Does a code skill need an event loop? Decided from the modules its source imports (anywhere in it).

It does unless every import is a standard-library module that never waits on a loop or a part of
agentapps that never does. A skill whose `run` only computes and calls `ctx.manager.invoke` needs
none (a callee that does gets one when it is called: core/driver.py); one that imports asyncio, a
third-party library, or agentapps' process, network, store, agent or MCP code is run on the loop.
"""

from __future__ import annotations

import sys

from agentapps.core.exports import PUBLIC_MODULES, source_of

LOOP_STDLIB = frozenset({"asyncio", "concurrent", "selectors", "socket", "ssl", "socketserver", "threading",
                         "multiprocessing", "queue", "signal", "subprocess", "http", "urllib", "xmlrpc"})
# parts of agentapps that never wait: what skills use to compute, validate and describe
LOOP_FREE_AGENTAPPS = ("agentapps.errors", "agentapps.types", "agentapps.tools.catalog", "agentapps.tools.schema",
                       "agentapps.tools.fastschema", "agentapps.tools.policy", "agentapps.tools.views",
                       "agentapps.tools.names", "agentapps.tools.patterns", "agentapps.context.plan",
                       "agentapps.context.calls", "agentapps.cascade", "agentapps.trust", "agentapps.core.driver",
                       "agentapps.core.confine", "agentapps.core.paths", "agentapps.files.ops", "agentapps.files.guard",
                       "agentapps.files.text", "agentapps.directives.expand", "agentapps.secrets",
                       "agentapps.agent.config", "agentapps.context.origin", "agentapps.context.context")


def _module_waits(name: str) -> bool:
    root = name.split(".", 1)[0]
    if root == "agentapps":
        return not any(name == m or name.startswith(m + ".") for m in LOOP_FREE_AGENTAPPS)
    return root in LOOP_STDLIB or root not in sys.stdlib_module_names


def needs_loop(source: str) -> bool:
    """Whether a skill with this source must run on an event loop (True when in doubt)."""
    import ast  # only when a code skill is read from its file (the index keeps the answer)

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(_module_waits(alias.name) for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module is None:
                return True  # a relative import: not a skill's usual shape, run it on the loop
            if node.module in PUBLIC_MODULES:  # a public name: as the internal module it comes from
                if any(_module_waits(source_of(node.module, a.name) or "?") for a in node.names):
                    return True
            elif _module_waits(node.module):
                return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            return True
    return False
