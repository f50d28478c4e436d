"""Registries: git repositories holding an `index.json` (the format is in docs/hub.md).

A project names its registries in its main skill (`metadata.hub.registries`: URLs or folders,
relative ones taken from the project root) and in AGENTAPPS_HUB_REGISTRIES (separated by
whitespace), which come first. A package is taken from the first registry that has it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentapps.errors import ConfigError, PackageError
from agentapps.hub.git import Repository
from agentapps.hub.semver import Range, Version
from agentapps.hub.sources import check_name, is_remote, parse_source

INDEX_FILE = "index.json"


@dataclass
class Release:
    """One version of a package, as a registry's index lists it."""

    name: str
    version: Version
    source: str  # a source spec; the registry's own repository when the index names none
    ref: str | None
    path: str
    registry: str
    description: str = ""
    keywords: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    dependencies: dict[str, Range] = field(default_factory=dict)
    python: list[str] = field(default_factory=list)
    deprecated: str | None = None


def configured(project: Path, main_metadata: dict[str, Any] | None) -> list[str]:
    found = (os.environ.get("AGENTAPPS_HUB_REGISTRIES") or "").split()
    hub = (main_metadata or {}).get("hub")
    listed = hub.get("registries") if isinstance(hub, dict) else None
    if hub is not None and not (isinstance(listed, list) and all(isinstance(r, str) for r in listed)):
        raise ConfigError("`hub.registries` must be a list of git URLs or folders.", setting=("hub", "registries"))
    found += listed or []
    return [r if "://" in r or r.startswith("github:") or "@" in r.split("/", 1)[0] else str((project / r).resolve())
            for r in found]


def _fail(where: str, message: str, line: int | None = None) -> PackageError:
    return PackageError(message, file=where, line=line)


def _strings(value: Any, where: str, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(where, f"`{what}` must be a list of strings.")
    return list(value)


def _release(name: str, text: str, info: Any, package: dict[str, Any], registry: str, where: str) -> Release:
    if not isinstance(info, dict):
        raise _fail(where, f"Package '{name}' version {text}: expected an object.")
    deps = info.get("dependencies") or {}
    if not isinstance(deps, dict) or not all(isinstance(v, str) for v in deps.values()):
        raise _fail(where, f"Package '{name}' version {text}: `dependencies` must map names to ranges.")
    path = info.get("path", "")
    ref = info.get("commit") or info.get("ref")
    if not isinstance(path, str) or (ref is not None and not isinstance(ref, str)):
        raise _fail(where, f"Package '{name}' version {text}: `path`, `ref` and `commit` must be strings.")
    try:
        version = Version.parse(text)
        ranges = {check_name(dep): Range.parse(spec) for dep, spec in deps.items()}
    except PackageError as exc:
        raise _fail(where, f"Package '{name}' version {text}: {exc.message}") from None
    source = info.get("source")
    if source is not None and (not isinstance(source, str) or (is_remote(registry) and not is_remote(source))):
        # an index fetched from elsewhere must not install a folder of this machine (a home
        # directory, another project's secrets) as a package: only a local registry may
        raise _fail(where, f"Package '{name}' version {text}: `source` must be a git URL or github: source "
                           f"(a registry on another machine may not name a local folder), not {source!r:.80}.")
    deprecated = info.get("deprecated", package.get("deprecated"))
    return Release(
        name, version, str(info.get("source") or registry), ref, path.strip("/"), registry,
        str(info.get("description") or package.get("description") or ""),
        _strings(package.get("keywords"), where, "keywords"), _strings(info.get("skills"), where, "skills"),
        ranges, _strings(info.get("python"), where, "python"),
        str(deprecated) if deprecated else None)


def parse_index(text: str, registry: str) -> dict[str, list[Release]]:
    """{package name: its releases, newest first} from an index.json's text."""
    where = f"{registry}/{INDEX_FILE}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(where, f"The registry index is not valid JSON: {exc.msg} (column {exc.colno}).", exc.lineno) from None
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict):
        raise _fail(where, "The registry index needs a `packages` object.")
    out: dict[str, list[Release]] = {}
    for name, package in packages.items():
        if not isinstance(package, dict) or not isinstance(package.get("versions"), dict):
            raise _fail(where, f"Package '{name}' needs a `versions` object.")
        try:
            check_name(name)
        except PackageError as exc:
            raise _fail(where, exc.message) from None
        releases = [_release(name, text, info, package, registry, where) for text, info in package["versions"].items()]
        out[name] = sorted(releases, key=lambda r: r.version, reverse=True)
    return out


class Registries:
    """The configured registries, each read once (at its current default branch)."""

    def __init__(self, project: Path, urls: list[str]) -> None:
        self.project, self.urls = project, urls
        self._indexes: dict[str, dict[str, list[Release]]] = {}

    def index(self, url: str) -> dict[str, list[Release]]:
        if url not in self._indexes:
            source = parse_source(url, self.project)
            repo = Repository(self.project, source.url)
            commit = repo.resolve(source.ref)
            inner = f"{source.path}/{INDEX_FILE}" if source.path else INDEX_FILE
            if not repo.exists(commit, inner):
                raise PackageError(f"Registry {url} has no {inner}.")
            self._indexes[url] = parse_index(repo.read(commit, inner).decode("utf-8", "replace"), url)
        return self._indexes[url]

    def releases(self, name: str, *, needed_by: str | None = None) -> list[Release]:
        if not self.urls:
            raise PackageError("No hub registry is configured: add `hub: {registries: [URL]}` to the main "
                               "skill's metadata or set AGENTAPPS_HUB_REGISTRIES.")
        for url in self.urls:
            found = self.index(url).get(name)
            if found:
                return found
        by = f" (needed by '{needed_by}')" if needed_by else ""
        raise PackageError(f"Unknown package '{name}'{by}: no configured registry lists it. Try 'agentapps hub "
                           "search'.")

    def everything(self) -> list[Release]:
        """The newest release of every package (a pre-release only when there is nothing else),
        first registry winning."""
        seen: dict[str, Release] = {}
        for url in self.urls:
            for name, releases in self.index(url).items():
                seen.setdefault(name, next((r for r in releases if not r.version.pre), releases[0]))
        return list(seen.values())
