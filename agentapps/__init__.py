"""agentapps: run AI skills from the shell. This module is the public API skill authors import.

    from agentapps import directive_target, ArgsError, create_callback_ref

Everything in `__all__` is stable; anything else under `agentapps.` is internal and may change.
Names are imported on first use, so `import agentapps` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agentapps.errors import (
    AgentAppsError,
    ArgsError,
    ChainError,
    ConfigError,
    ConflictError,
    DeniedError,
    InterruptedError_,
    LimitError,
    LockTimeoutError,
    ProviderError,
    ReturnsError,
    SkillError,
    SkillLoadError,
    SkillNotFoundError,
    StoreCorruptError,
    UsageError,
)

if TYPE_CHECKING:
    from agentapps.boot import bootstrap
    from agentapps.context.context import Context
    from agentapps.context.manager import invoke_root
    from agentapps.directives.expand import directive_target
    from agentapps.tools.callbacks import create_callback_ref, release_callback_ref
    from agentapps.types import ToolDef

_LAZY = {
    "Context": "agentapps.context.context",
    "ToolDef": "agentapps.types",
    "bootstrap": "agentapps.boot",
    "invoke_root": "agentapps.context.manager",
    "directive_target": "agentapps.directives.expand",
    "create_callback_ref": "agentapps.tools.callbacks",
    "release_callback_ref": "agentapps.tools.callbacks",
}

__all__ = [
    "AgentAppsError", "ArgsError", "ChainError", "ConfigError", "ConflictError", "Context", "DeniedError",
    "InterruptedError_", "LimitError", "LockTimeoutError", "ProviderError", "ReturnsError", "SkillError",
    "SkillLoadError", "SkillNotFoundError", "StoreCorruptError", "ToolDef", "UsageError", "bootstrap",
    "create_callback_ref", "directive_target", "invoke_root", "release_callback_ref",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentapps' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
