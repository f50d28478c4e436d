"""The public modules' machinery: each re-exports internal names, imported on first use.

A public module (`PUBLIC_MODULES`) holds a table `_EXPORTS` of public name -> "module" or
"module:attribute" (when the public name differs from the internal one) and hands its
`__getattr__` to `lazy_exports`, so importing it imports nothing else: a skill pays only for the
names it uses, where it uses them. `source_of` tells `tools.loopscan` where a public name lives, so
a skill that imports public names needs an event loop exactly when one importing the internals would.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

PUBLIC_MODULES = ("agentapps", "agentapps.skill", "agentapps.pipeline", "agentapps.runtime", "agentapps.io")


def _split(target: str, name: str) -> tuple[str, str]:
    module, _, attribute = target.partition(":")
    return module, attribute or name


def lazy_exports(module: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of public module `module`: a name of `table` is imported, kept in
    the module (the next access is a plain lookup) and returned; any other name is an AttributeError."""
    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        source, attribute = _split(target, name)
        value = getattr(import_module(source), attribute)
        sys.modules[module].__dict__[name] = value
        return value
    return __getattr__


def source_of(module: str, name: str) -> str | None:
    """The internal module public name `module.name` comes from; None when it is not public."""
    if module not in PUBLIC_MODULES:
        return None
    table: Mapping[str, str] = getattr(import_module(module), "_EXPORTS", {})
    target = table.get(name)
    return None if target is None else _split(target, name)[0]
