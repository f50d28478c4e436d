"""agentapps: run AI skills from the shell, or from Python. This module is the public API.

    import agentapps
    result = agentapps.run("summarize", {"path": "notes.md"})        # or: await agentapps.arun(...)

    from agentapps import ArgsError, directive_target, create_callback_ref   # in a skill

Everything in `__all__` here and in the public modules `agentapps.skill` (helpers any skill may
use), `agentapps.pipeline` (what middleware and the execution leaves use), `agentapps.runtime`
(state, sessions, events, callbacks) and `agentapps.io` (files, commands, HTTP) is stable: a
name stays, with its meaning, within a major version. Anything else under `agentapps.` is
internal and may change; bundled skills import only public names, so a copy of one keeps working.
Names are imported on first use, so `import agentapps` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.exports import lazy_exports
from agentapps.errors import (
    AgentAppsError,
    ArgsError,
    ChainError,
    ConfigError,
    ConflictError,
    DeniedError,
    LimitError,
    LockTimeoutError,
    ProviderError,
    ReturnsError,
    RunInterruptedError,
    SkillError,
    SkillLoadError,
    SkillNotFoundError,
    StoreCorruptError,
    StoreUnavailableError,
    StoreWriteError,
    UsageError,
)

if TYPE_CHECKING:
    from agentapps.boot import bootstrap
    from agentapps.callbacks.refs import create_callback_ref, release_callback_ref
    from agentapps.context.context import Context
    from agentapps.context.manager import invoke_root
    from agentapps.directives.expand import directive_target
    from agentapps.embedded import arun, run
    from agentapps.types import ToolDef

_ERRORS = ("AgentAppsError", "ArgsError", "ChainError", "ConfigError", "ConflictError", "DeniedError", "LimitError",
           "LockTimeoutError", "ProviderError", "ReturnsError", "RunInterruptedError", "SkillError",
           "SkillLoadError", "SkillNotFoundError", "StoreCorruptError", "StoreUnavailableError",
           "StoreWriteError", "UsageError")
_EXPORTS = {
    **dict.fromkeys(_ERRORS, "agentapps.errors"),  # imported above: the error tree is always there
    "run": "agentapps.embedded",
    "arun": "agentapps.embedded",
    "Context": "agentapps.context.context",
    "ToolDef": "agentapps.types",
    "bootstrap": "agentapps.boot",
    "invoke_root": "agentapps.context.manager",
    "directive_target": "agentapps.directives.expand",
    "create_callback_ref": "agentapps.callbacks.refs",
    "release_callback_ref": "agentapps.callbacks.refs",
}

__all__ = [
    "AgentAppsError", "ArgsError", "ChainError", "ConfigError", "ConflictError", "Context", "DeniedError",
    "LimitError", "LockTimeoutError", "ProviderError", "ReturnsError", "RunInterruptedError", "SkillError",
    "SkillLoadError", "SkillNotFoundError", "StoreCorruptError", "StoreUnavailableError", "StoreWriteError",
    "ToolDef", "UsageError", "arun", "bootstrap", "create_callback_ref", "directive_target", "invoke_root",
    "release_callback_ref", "run",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
