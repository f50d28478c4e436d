"""`metadata.mcp` declarations: checked into ServerSpecs; `${VAR}` values read when a server starts.

    mcp:
      github: { command: npx, args: [-y, "@modelcontextprotocol/server-github"],
                env: { GITHUB_TOKEN: "${GITHUB_TOKEN}" } }
      remote: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ${TOKEN}" } }

`url` wins when both are given. Optional per server: `cwd` (stdio; relative to the project),
`timeout` (seconds per call, default 120), `startTimeout` (seconds to start and list, default 30),
`confirm` (`destructive`, the default: tools annotated destructive and not read-only need
approval; `all`; `none`), `network` (stdio; `true` lets the server use the network inside the OS
sandbox, docs/sandbox.md). Values read from the environment are secrets: redacted everywhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import ConfigError, DeniedError
from agentapps.secrets import register_declared
from agentapps.tools.mcpnames import sanitize
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.runstate import Internals

CALL_TIMEOUT = 120.0
START_TIMEOUT = 30.0
CONFIRM = ("destructive", "all", "none")
KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers", "timeout", "startTimeout", "confirm",
                  "network"})
# A server process gets these from our environment, plus its own `env`: never our secrets.
INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
# Only the project's own skills may send credentials to a host they name.
HTTP_ROOTS = ("project", "project-skills")
_VAR = re.compile(r"\\?\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ServerSpec:
    """One declared server, as written (environment references unexpanded)."""

    name: str
    prefix: str  # the sanitised name: its tools are skills `<prefix>-<tool>`
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = CALL_TIMEOUT
    start_timeout: float = START_TIMEOUT
    confirm: str = "destructive"
    network: bool = False  # a stdio server's grant of the network inside the OS sandbox
    declared_by: str = ""
    file: str | None = None

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    @property
    def key(self) -> str:
        """Identifies the server's configuration (its tool-list cache entry); holds no secret."""
        shape = [self.command, list(self.args), sorted(self.env), self.cwd, self.url, sorted(self.headers)]
        return hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:20]

    @property
    def shown(self) -> str:
        """What error messages say the server is (never an environment value)."""
        return self.url or " ".join([self.command or "", *self.args])[:200]


def line_of(file: str | Path | None, *keys: str) -> int | None:
    """The line of `metadata.mcp.KEYS...` in `file` (of the nearest enclosing key that is written),
    for an error's `file:line`; None when it cannot be told. Only read when an error is raised."""
    if file is None:
        return None
    from agentapps.tools.locate import KeyLines

    try:
        return KeyLines(Path(file)).line(["metadata", "mcp", *keys])
    except Exception:  # noqa: BLE001 - locating is best effort: the error itself must still surface
        return None


def _bad(owner: ToolDef, server: str, why: str) -> ConfigError:
    return ConfigError(f"Skill '{owner.name}' metadata.mcp.{server}: {why}", skill=owner.name, file=owner.path,
                       line=line_of(owner.path, server))


def _strings(owner: ToolDef, server: str, key: str, value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value.values()):
        raise _bad(owner, server, f"`{key}` must map names to strings.")
    return tuple((str(k), str(v)) for k, v in value.items())


def _seconds(owner: ToolDef, server: str, key: str, value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
        raise _bad(owner, server, f"`{key}` must be a number of seconds from 0 to 86400.")
    return float(value)


def parse_server(owner: ToolDef, name: Any, entry: Any, project: Path | None) -> ServerSpec:
    """One `metadata.mcp` entry of skill `owner`, checked."""
    server = str(name)
    if not sanitize(server) or len(sanitize(server)) > 40:
        raise _bad(owner, server, "a server name needs 1-40 letters or digits.")
    if not isinstance(entry, dict):
        raise _bad(owner, server, "use {command, args, env} for a local server or {url, headers} for HTTP.")
    unknown = sorted(str(k) for k in entry if k not in KEYS)
    if unknown:
        raise _bad(owner, server, f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(KEYS))}.")
    common = {
        "name": server, "prefix": sanitize(server), "declared_by": owner.name,
        "file": str(owner.path) if owner.path else None,
        "timeout": _seconds(owner, server, "timeout", entry.get("timeout"), CALL_TIMEOUT),
        "start_timeout": _seconds(owner, server, "startTimeout", entry.get("startTimeout"), START_TIMEOUT),
        "confirm": entry.get("confirm", "destructive"),
    }
    if common["confirm"] not in CONFIRM:
        raise _bad(owner, server, f"`confirm` must be one of {', '.join(CONFIRM)}.")
    url = entry.get("url")
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise _bad(owner, server, "`url` must be an http:// or https:// address.")
        if not (owner.is_main or owner.root_kind in HTTP_ROOTS):
            where = f"the {owner.root_kind} skills folder" if owner.root_kind else "outside the project"
            raise DeniedError(
                f"Skill '{owner.name}' ({where}) declares the HTTP MCP server '{server}': only the "
                "project's own skills may declare one (declare it in the main skill).",
                skill=owner.name, file=owner.path)
        return ServerSpec(url=url, headers=_strings(owner, server, "headers", entry.get("headers")), **common)
    command, args = entry.get("command"), entry.get("args") or []
    if not isinstance(command, str) or not command.strip():
        raise _bad(owner, server, "needs `command` (a program to start) or `url`.")
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise _bad(owner, server, "`args` must be a list of strings.")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _bad(owner, server, "`cwd` must be a folder path.")
    network = entry.get("network", False)
    if not isinstance(network, bool):
        raise _bad(owner, server, "`network` must be true or false.")
    base = project or (owner.path.parent if owner.path else Path.cwd())
    return ServerSpec(command=command, args=tuple(str(a) for a in args), network=network,
                      env=_strings(owner, server, "env", entry.get("env")),
                      cwd=str((base / cwd).resolve()) if cwd else str(base), **common)


def remember_secret(internals: Internals, variable: str) -> None:
    """The one place MCP values read from the environment join the redaction registry."""
    register_declared(internals, [variable])


def expand(spec: ServerSpec, where: str, value: str, internals: Internals) -> str:
    """`${VAR}` (or `\\${VAR}`) replaced by the environment's value, which becomes a secret."""

    def sub(match: re.Match[str]) -> str:
        variable = match.group(1)
        found = os.environ.get(variable)
        if found is None:
            raise ConfigError(f"MCP server '{spec.name}' needs the environment variable {variable} "
                              f"(its {where}); set it, or remove it from metadata.mcp.{spec.name}.",
                              skill=spec.declared_by, file=spec.file,
                              line=line_of(spec.file, spec.name, *where.split(".", 1)))
        remember_secret(internals, variable)
        return found

    return _VAR.sub(sub, value)


def child_env(spec: ServerSpec, internals: Internals) -> dict[str, str]:
    env = {k: os.environ[k] for k in INHERITED if k in os.environ}
    env.update({k: expand(spec, f"env.{k}", v, internals) for k, v in spec.env})
    return env


def http_headers(spec: ServerSpec, internals: Internals) -> dict[str, str]:
    return {k: expand(spec, f"headers.{k}", v, internals) for k, v in spec.headers}
