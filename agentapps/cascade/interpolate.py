r"""`${path}` interpolation of metadata strings against the context; `\${...}` stays literal."""

from __future__ import annotations

import re
from typing import Any

from agentapps.core.paths import path_get

_TOKEN = re.compile(r"\\\$\{([^}]*)\}|\$\{([^}]*)\}")


def needs_interpolation(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(needs_interpolation(v) for v in value.values())
    if isinstance(value, list):
        return any(needs_interpolation(v) for v in value)
    return False


def interpolate(value: Any, scope: Any) -> Any:
    if isinstance(value, str):
        whole = _TOKEN.fullmatch(value)
        if whole and whole.group(2) is not None:
            return path_get(scope, whole.group(2).strip())  # a lone ${x} keeps x's type

        def sub(match: re.Match[str]) -> str:
            if match.group(1) is not None:
                return "${" + match.group(1) + "}"
            found = path_get(scope, match.group(2).strip())
            return "" if found is None else str(found)

        return _TOKEN.sub(sub, value)
    if isinstance(value, dict):
        return {k: interpolate(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, scope) for v in value]
    return value
