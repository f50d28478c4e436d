"""Override paths with a typo in their first segment: refused with a did-you-mean (cascade.local).

The rule, and why: a project may keep configuration of its own under any metadata key (a skill
reads `ctx.meta["api"]`), so an unknown key cannot simply be refused. A first segment is refused
only when it is neither a key agentapps reads (`KNOWN_KEYS`) nor one the main skill's file has,
and it is close to one of those (`modle` for `model`): a typo, not a new key.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentapps.errors import UsageError
from agentapps.tools.names import close_names

# metadata keys agentapps itself reads (docs/skills.md, docs/pipeline.md, the bundled middleware)
KNOWN_KEYS = frozenset({
    "model", "session", "env", "paths", "trust", "events", "applies-to", "applies-if", "before", "after",
    "action-args", "mcp", "stores", "webhook", "schedule", "sandbox", "network", "template", "version",
    "verified", "root", "dirs", "directives", "annotations", "validate-returns", "budget", "limits",
})


def _folded(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def refuse_typo(head: str, where: str, env: bool, present: Iterable[str]) -> None:
    """UsageError when `head` is no known or present key but close to one. A variable's segment
    (`env`) is compared ignoring case, `_` and `-`, as it is matched when applied."""
    known = {*KNOWN_KEYS, *present}
    fold = _folded if env else str
    spelled = {fold(k): k for k in known}
    if fold(head) in spelled:
        return
    close = close_names(fold(head), spelled, limit=1)
    if close:
        raise UsageError(f"{where}: unknown metadata key '{head}'; did you mean '{spelled[close[0]]}'? "
                         "(a key of your own spelled like a known one must be in the main skill's file first)")
