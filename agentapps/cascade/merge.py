"""Merge strategies for cascaded metadata: replace, prepend, append, shallow, deep."""

from __future__ import annotations

from typing import Any

from agentapps.errors import ConfigError

STRATEGIES = ("replace", "prepend", "append", "shallow", "deep")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def deep_merge(lower: Any, higher: Any) -> Any:
    if isinstance(lower, dict) and isinstance(higher, dict):
        out = dict(lower)
        for key, value in higher.items():
            out[key] = deep_merge(lower[key], value) if key in lower else value
        return out
    return higher


def combine(lower: Any, higher: Any, strategy: str) -> Any:
    """Combine an inherited value (`lower`) with a more specific one (`higher`).

    `prepend` puts the more specific level's items first, `append` puts them last.
    """
    if strategy == "replace":
        return higher
    if strategy == "prepend":
        return _as_list(higher) + [v for v in _as_list(lower) if v not in _as_list(higher)]
    if strategy == "append":
        return [v for v in _as_list(lower) if v not in _as_list(higher)] + _as_list(higher)
    if strategy == "shallow":
        if isinstance(lower, dict) and isinstance(higher, dict):
            return {**lower, **higher}
        return higher
    if strategy == "deep":
        return deep_merge(lower, higher)
    raise unknown_strategy(strategy)


def unknown_strategy(strategy: Any) -> ConfigError:
    return ConfigError(f"Unknown $merge strategy '{strategy}'; use one of {', '.join(STRATEGIES)}.")


def merge_levels(levels: list[dict[str, Any]], strategies: dict[str, str]) -> dict[str, Any]:
    """Merge levels given from most specific to least specific."""
    result: dict[str, Any] = {}
    for level in reversed(levels):
        for key, value in level.items():
            if key in result:
                result[key] = combine(result[key], value, strategies.get(key, "replace"))
            else:
                result[key] = value
    # keep the most specific level's key order first: it reads naturally in `describe`
    ordered: dict[str, Any] = {}
    for level in levels:
        for key in level:
            if key not in ordered:
                ordered[key] = result[key]
    return ordered
