"""Where a package comes from: a source spec parsed into a git URL, a folder and a ref.

    github:OWNER/REPO[/PATH][@REF]     https://github.com/OWNER/REPO.git
    https://host/repo.git[#REF]        any git URL (https, http, ssh, git, file, user@host:path)
    ./folder or /abs/folder[#REF]      a local git repository (file:// URLs too)

Only these transports are accepted: git's `ext::` and `fd::` helpers run commands, and a source
beginning with `-` would be read as an option.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agentapps.errors import PackageError

_GITHUB = re.compile(r"^github:([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)((?:/[^@]+)?)(?:@(.+))?$")
_URL = re.compile(r"^(https?|ssh|git|file)://")
_SCP = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]")


@dataclass(frozen=True)
class Source:
    """`spec` is how the lock file writes it; `url` is what git fetches."""

    spec: str
    url: str
    path: str = ""
    ref: str | None = None


def _clean_path(path: str, spec: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PackageError(f"Source '{spec}': a path inside the repository cannot contain '..'.")
    return "/".join(parts)


def parse_source(text: str, base: Path, *, path: str | None = None, ref: str | None = None) -> Source:
    """Parse a source spec; `base` is the folder a relative local path is taken from. `path` and
    `ref` (the CLI's --path and --ref) override what the spec says."""
    spec = text.strip()
    if not spec or spec.startswith("-") or "::" in spec.split("#", 1)[0]:
        raise PackageError(f"'{text}' is not a source: use github:OWNER/REPO[/PATH][@REF], a git URL or a "
                           "local folder.")
    github = _GITHUB.match(spec)
    if github is not None:
        owner, repo, inner, at = github.groups()
        repo = repo.removesuffix(".git")
        return Source(spec, f"https://github.com/{owner}/{repo}.git",
                      _clean_path(path if path is not None else inner, spec), ref or at)
    if spec.startswith("github:"):
        raise PackageError(f"'{text}' is not a GitHub source: use github:OWNER/REPO[/PATH][@REF].")
    location, _, fragment = spec.partition("#")
    chosen_ref = ref or fragment or None
    inner = _clean_path(path or "", spec)
    if _URL.match(location) or _SCP.match(location):
        return Source(spec, location, inner, chosen_ref)
    folder = (base / os.path.expanduser(location)).resolve()
    if not folder.is_dir():
        raise PackageError(f"Source '{text}': no such folder, and not a github: source or a git URL.")
    return Source(spec, str(folder), inner, chosen_ref)


def is_remote(spec: str) -> bool:
    """Whether a source spec names another machine (github:, an http(s), ssh or git URL, user@host:)
    rather than a folder or a file:// repository on this one."""
    location = spec.strip().partition("#")[0]
    return bool(_GITHUB.match(location) or _SCP.match(location)
                or (_URL.match(location) and not location.startswith("file://")))


def package_name(source: Source) -> str:
    """The name a source installs under when none is given: its folder's, else the repository's."""
    last = source.path.rsplit("/", 1)[-1] if source.path and source.path != "skills" else ""
    raw = last or source.url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    name = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")[:64]
    if not name:
        raise PackageError(f"Cannot name a package after '{source.spec}': give one with --name.")
    return name


def check_name(name: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", name):
        raise PackageError(f"Invalid package name {name!r}: use 1-64 characters of a-z, 0-9 and '-'.")
    return name
