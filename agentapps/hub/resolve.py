"""Dependency resolution: one version of each package (the folder `.agent-apps/packages/NAME` holds
one), the newest that every range asking for it allows.

Start from the requested ranges, pick the newest allowed version of each package, add the ranges
its dependencies ask for, and pick again until nothing changes. A package whose ranges allow no
common version is an error naming who asked for what.
"""

from __future__ import annotations

from agentapps.errors import PackageError
from agentapps.hub.registry import Registries, Release
from agentapps.hub.semver import Range

MAX_ROUNDS = 100
ROOT = "(requested)"


def resolve(registries: Registries, requests: dict[str, Range]) -> dict[str, Release]:
    """{name: the chosen release} for `requests` and everything they depend on."""
    chosen: dict[str, Release] = {}
    for _ in range(MAX_ROUNDS):
        wanted: dict[str, list[tuple[Range, str]]] = {name: [(spec, ROOT)] for name, spec in requests.items()}
        for release in chosen.values():
            for dep, spec in release.dependencies.items():
                wanted.setdefault(dep, []).append((spec, f"{release.name}@{release.version}"))
        picked: dict[str, Release] = {}
        for name, asks in wanted.items():
            needed_by = next((by for _, by in asks if by != ROOT), None)
            releases = registries.releases(name, needed_by=needed_by)
            fit = [r for r in releases if all(spec.allows(r.version) for spec, _ in asks)]
            if not fit:
                said = ", ".join(f"{spec} (by {by})" for spec, by in asks)
                have = ", ".join(str(r.version) for r in releases[:8])
                raise PackageError(f"No version of '{name}' satisfies {said}; the registry has {have}.")
            picked[name] = fit[0]  # releases come newest first
        if {n: r.version for n, r in picked.items()} == {n: r.version for n, r in chosen.items()}:
            return picked
        chosen = picked
    raise PackageError(f"Dependency resolution did not settle in {MAX_ROUNDS} rounds (ranges that keep "
                       "changing each other).")
