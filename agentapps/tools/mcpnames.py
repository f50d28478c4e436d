"""Skill names and URIs for MCP tools: `<server>-<tool>`, sanitised, and `mcp://server/tool`."""

from __future__ import annotations

import re

from agentapps.tools.names import is_valid_name

SCHEME = "mcp://"
_OTHER = re.compile(r"[^a-z0-9]+")


def sanitize(text: str) -> str:
    """Lowercase; every character but a-z and 0-9 becomes '-'; runs collapse; ends are stripped."""
    return _OTHER.sub("-", text.lower()).strip("-")


def skill_name(server: str, tool: str) -> str | None:
    """The skill a server's tool becomes, or None when no valid skill name results (empty, too long)."""
    name = f"{sanitize(server)}-{sanitize(tool)}"
    return name if sanitize(tool) and sanitize(server) and is_valid_name(name) else None


def uri(server: str, tool: str) -> str:
    return f"{SCHEME}{sanitize(server)}/{sanitize(tool)}"


def server_of_uri(ref: str) -> str | None:
    """The sanitised server name in `mcp://server/tool`, or None for any other ref."""
    if not ref.startswith(SCHEME):
        return None
    return ref[len(SCHEME):].partition("/")[0] or None
