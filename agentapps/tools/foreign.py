"""Other agents' tool names in `allowed-tools` (Agent Skills written for Claude Code, Copilot...),
mapped onto the equivalent built-ins and argument constraints.

A token is foreign when it starts with an upper-case letter or with `mcp__` (skill names are
lower-case). Each maps to zero or more patterns of our own syntax:

| foreign | here |
|---|---|
| `Read`, `Write`, `Glob`/`LS`, `Grep` | `file-read`, `file-write`, `file-list`, `file-search` |
| `Edit`, `MultiEdit` | `file-read file-write` (agent code edits text itself) |
| `Read(glob)`, `Write(glob)`, `Edit(glob)` | the same with a `path=` constraint |
| `WebFetch`, `WebFetch(domain:host)` | `http(url=...)`: GET only (a constraint on `url` alone admits no other method) |
| `Bash`, `Bash(*)` | `shell` |
| `Bash(git:*)` | `shell(command={git,git *})`: commands starting with that word |
| `Bash(git status)`, `Bash(npm run *)` | `shell(command=...)`: that command line, `*` a wildcard |
| `Task` | `agent` (sub-agents, bound by the starting agent's grant) |
| `mcp__server`, `mcp__server__tool` | `server-*`, `server-tool` (MCP tools are skills named so) |

`shell` constraints match each simple command the line runs (docs/shell-rules.md): a grant admits
a line only when every command in it is admitted, so a `git` prefix never admits `git status; id`,
and never what cannot be reduced to plain words (`git $(id)`, `git -c alias.x=!id x`). A Bash
pattern that starts with `*` would admit any program and is not mapped. Names with no equivalent (`WebSearch`, `TodoWrite`, ...) and
forms we cannot map exactly map to nothing: the skill loads, and `agentapps check` warns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentapps.tools.names import is_foreign

SIMPLE = {
    "Read": ("file-read",), "Write": ("file-write",), "Glob": ("file-list",), "LS": ("file-list",),
    "Grep": ("file-search",), "Edit": ("file-read", "file-write"),
    "MultiEdit": ("file-read", "file-write"), "Bash": ("shell",), "Task": ("agent",),
    "WebFetch": ("http(url=*)",),
}
PATH_TOOLS = {"Read": ("file-read",), "Write": ("file-write",), "Edit": ("file-read", "file-write"),
              "MultiEdit": ("file-read", "file-write"), "Glob": ("file-list",)}
NOT_NEEDED = {
    "TodoWrite": "agent code keeps notes in `memory`",
    "TodoRead": "agent code keeps notes in `memory`",
    "ExitPlanMode": "there is no plan mode",
}
_GLOB_SPECIAL = set("*?[]{}\\,()")
_SAFE_LINE = re.compile(r"[\w@%+=:,./ -]+", re.ASCII)  # words shlex.join leaves unquoted, single spaces


@dataclass(frozen=True)
class Mapped:
    """What one allowed-tools token becomes: our patterns, and a note when it lost something."""

    token: str
    patterns: tuple[str, ...]
    problem: str | None = None

    @property
    def foreign(self) -> bool:
        return self.patterns != (self.token,)


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in _GLOB_SPECIAL else ch for ch in text)


def _bash(token: str, spec: str) -> Mapped:
    """`Bash(...)`: a command prefix (`git:*`) or a command with `*` wildcards. Only words that a
    reduced command shows as they are (no quotes or shell syntax) are accepted, so the pattern is
    written in the very spelling `shell` constraints are matched on."""
    spec = " ".join(spec.split())
    if spec in ("", "*"):
        return Mapped(token, ("shell",))
    prefix = spec[:-2].rstrip() if spec.endswith(":*") else None
    body = prefix if prefix is not None else spec
    if not body or not _SAFE_LINE.fullmatch(body.replace("*", "") if prefix is None else body):
        return Mapped(token, (), f"'{token}': only plain words (letters, digits, and @%+=:,./_-) "
                                 "can be granted as a command")
    if prefix is not None:
        escaped = _escape(prefix)
        return Mapped(token, (f"shell(command={{{escaped},{escaped} *}})",))
    if spec.startswith("*"):
        return Mapped(token, (), f"'{token}': a pattern starting with '*' would admit any program, "
                                 "so it is not mapped")
    return Mapped(token, (f"shell(command={'*'.join(_escape(w) for w in spec.split('*'))})",))


def _path_glob(spec: str) -> str | None:
    """A Claude-style path glob (`./docs/**`, `src/**/*.ts`) as a project-relative glob here,
    where `*` crosses folders; None for paths outside the project (`~/`, `//abs`, `/abs`)."""
    spec = spec.strip()
    if not spec or spec.startswith(("~", "/")) or ".." in spec.split("/"):
        return None
    spec = spec.removeprefix("./")
    spec = re.sub(r"(\*\*/)+", "*", spec)
    spec = re.sub(r"\*+", "*", spec)
    return spec


def _mcp(token: str) -> Mapped:
    from agentapps.tools.mcpnames import sanitize

    parts = token[len("mcp__"):].split("__", 1)
    server = sanitize(parts[0])
    if not server:
        return Mapped(token, (), f"'{token}': no server name")
    if len(parts) == 1 or parts[1] in ("", "*"):
        return Mapped(token, (f"{server}-*",))
    tool = sanitize(parts[1]) if parts[1] != "*" else "*"
    return Mapped(token, (f"{server}-{tool}",)) if tool else Mapped(token, (), f"'{token}': no tool name")


@lru_cache(maxsize=1024)
def translate(token: str) -> Mapped:
    """Our patterns for one allowed-tools token (a token of our own syntax maps to itself)."""
    if not is_foreign(token):
        return Mapped(token, (token,))
    if token.startswith("mcp__"):
        return _mcp(token)
    name, paren, spec = token.partition("(")
    if not paren:
        if name in SIMPLE:
            return Mapped(token, SIMPLE[name])
        why = NOT_NEEDED.get(name)
        return Mapped(token, (), f"'{token}' has no equivalent here" + (f" ({why})" if why else ""))
    if not spec.endswith(")"):
        return Mapped(token, (), f"'{token}': malformed specifier")
    spec = spec[:-1]
    if name == "Bash":
        return _bash(token, spec)
    if name in PATH_TOOLS:
        glob = _path_glob(spec)
        if glob is None:
            return Mapped(token, (), f"'{token}': only paths inside the project can be granted")
        arg = "glob" if name == "Glob" else "path"
        return Mapped(token, tuple(f"{tool}({arg}={_escape_path(glob)})" for tool in PATH_TOOLS[name]))
    if name == "WebFetch":
        host = spec.strip().removeprefix("domain:").strip().lower()
        if not re.fullmatch(r"[a-z0-9.-]+", host or "-"):
            return Mapped(token, (), f"'{token}': expected WebFetch(domain:HOST)")
        return Mapped(token, (f"http(url={{https://{host},https://{host}/*}})",))
    return Mapped(token, (), f"'{token}' has no equivalent here")


def _escape_path(glob: str) -> str:
    """Escape what our specifier syntax reads specially, keeping the glob's own `*` and `?`."""
    return "".join("\\" + ch if ch in ",(){}[]\\" else ch for ch in glob)


def translated(text: str) -> str:
    """An allowed-tools string with every foreign token replaced by its patterns."""
    from agentapps.tools.policy import split_patterns

    return " ".join(p for token in split_patterns(text) for p in translate(token).patterns)


def problems(text: str | list[str]) -> list[str]:
    """What the foreign tokens of an allowed-tools value lost in the mapping (for `check`)."""
    from agentapps.tools.policy import split_patterns

    items = [text] if isinstance(text, str) else [str(t) for t in text]
    return [m.problem for item in items for token in split_patterns(item)
            if (m := translate(token)).problem is not None]


def mapping(text: str | None) -> list[dict[str, Any]]:
    """Each foreign token of an allowed-tools value and what it maps to (for `describe`)."""
    if text is None:
        return []
    from agentapps.tools.policy import split_patterns

    return [{"name": token, "mapsTo": list(m.patterns), "problem": m.problem}
            for token in split_patterns(text) if (m := translate(token)).foreign]
