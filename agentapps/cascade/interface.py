"""A skill's interface (`params`, `returns`): its own, else what its `$inherit` parents declare.

The authority and `default` never pass interface keys, so only the `$inherit` chain (C3 order)
matters; this needs no context and serves validation, the CLI, `describe` and agent tool docs alike.
"""

from __future__ import annotations

from typing import Any

from agentapps.cascade.resolve import inherit_chain
from agentapps.errors import AgentAppsError
from agentapps.tools.lookup import Lookup
from agentapps.types import ToolDef


def _schema(meta: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = meta.get(key)
    return value if isinstance(value, dict) else None


def interface_key(tool: ToolDef, lookup: Lookup, key: str,
                  authority: ToolDef | None = None) -> dict[str, Any] | None:
    """`params` or `returns` of `tool`, inherited through `$inherit` when the tool declares none."""
    own = _schema(tool.metadata, key)
    if own is not None or not tool.metadata.get("$inherit"):
        return own
    try:
        chain = inherit_chain(tool, lambda name, child: lookup.find(name), authority)
    except AgentAppsError:
        return None  # a broken $inherit chain is reported when the skill runs (or by `check`)
    for parent in chain:
        inherited = _schema(parent.metadata, key)
        if inherited is not None:
            return inherited
    return None


def params_of(tool: ToolDef, lookup: Lookup, authority: ToolDef | None = None) -> dict[str, Any] | None:
    return interface_key(tool, lookup, "params", authority)


def returns_of(tool: ToolDef, lookup: Lookup, authority: ToolDef | None = None) -> dict[str, Any] | None:
    return interface_key(tool, lookup, "returns", authority)
