"""The skill a run was asked for: a name or a path from whoever started the run (argv, Python)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.errors import UsageError

if TYPE_CHECKING:
    from agentapps.context.context import Globals


def resolve(g: Globals, ref: Any) -> Any:
    """The tool `ref` names on `g`'s search path. A ref the file system cannot even look up (a
    300-character "name" read as a path) is a usage error, not an internal one."""
    if not isinstance(ref, str):
        raise UsageError(f"Name the skill to run as text (a name or a path), got {type(ref).__name__}.")
    try:
        return g.lookup.resolve(ref)
    except OSError as exc:
        shown = ref if len(ref) <= 60 else ref[:57] + "..."
        raise UsageError(f"No skill '{shown}': {exc.strerror or exc}. Skill names are lowercase letters, "
                         "digits and '-', at most 64 characters.") from None
