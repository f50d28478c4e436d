"""Skill names and refs: what is a bare name, a path or a URI, and which files are skills."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Literal

# The prompt `agentapps init` writes into a new main skill: a placeholder, not a task anyone wrote
MAIN_PLACEHOLDER = "Describe what this project's agent should do when run without naming a skill."

NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,63})$")
URI_RE = re.compile(r"^[a-z][a-z0-9+.-]*://")
SKILL_SUFFIXES = (".skill.md", ".skill.py")
FOLDER_SKILL_FILE = "SKILL.md"

RefKind = Literal["name", "path", "uri"]


def is_foreign(token: str) -> bool:
    """An allowed-tools token in another agent's spelling (`Read`, `Bash(git:*)`, `mcp__srv__tool`):
    agentapps.tools.foreign maps it onto ours."""
    return token[:1].isupper() or token.startswith("mcp__")


def is_valid_name(name: str) -> bool:
    return bool(NAME_RE.match(name)) and len(name) <= 64


@lru_cache(maxsize=1024)
def ref_kind(ref: str) -> RefKind:
    """Classify a ref the way $PATH lookup does: anything that is not a bare name is a path."""
    if URI_RE.match(ref):
        return "uri"
    if is_valid_name(ref) and not ref.endswith(SKILL_SUFFIXES):
        return "name"
    return "path"


def is_skill_file(filename: str) -> bool:
    return filename == FOLDER_SKILL_FILE or filename.endswith(SKILL_SUFFIXES)


def name_from_file(path_name: str, parent_name: str) -> str:
    """The name a skill file has when its frontmatter names none."""
    if path_name == FOLDER_SKILL_FILE:
        return parent_name
    for suffix in SKILL_SUFFIXES:
        if path_name.endswith(suffix):
            return path_name[: -len(suffix)]
    return path_name


def close_names(name: str, known: Iterable[str], limit: int = 3) -> list[str]:
    import difflib  # only when suggesting

    return difflib.get_close_matches(name, list(known), n=limit, cutoff=0.75)  # 0.6 offered "context" for "nonexist"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    close = close_names(name, known)
    if not close:
        return ""
    return " Did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def unknown_args_hint(args: Iterable[str], params: Mapping[str, Any] | None) -> str:
    """' Did you mean 'name' instead of 'nmae'?' for argument names that `params` does not declare
    but that resemble a declared param not given; '' when there is none (or patterns may match)."""
    props = (params or {}).get("properties")
    if not isinstance(props, dict) or not props or (params or {}).get("patternProperties"):
        return ""
    given = list(args)
    free = [p for p in props if p not in given]
    pairs = [(close[0], key) for key in given if key not in props
             for close in [close_names(str(key), free, limit=1)] if close]
    if not pairs:
        return ""
    return " Did you mean " + ", ".join(f"'{want}' instead of '{got}'" for want, got in pairs) + "?"
