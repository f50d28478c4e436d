"""What `list`, `describe` and `which` show: summaries of skills as plain data."""

from __future__ import annotations

from typing import Any

from agentapps.errors import SkillLoadError
from agentapps.tools.index import Broken
from agentapps.tools.lookup import Lookup
from agentapps.types import ToolDef


def _memory_source(tool: ToolDef) -> str:
    if tool.kind != "memory":
        return "path"
    return "mcp" if (tool.uri or "").startswith("mcp://") else "memory"


def summary(tool: ToolDef) -> dict[str, Any]:
    row = _summary(tool)
    if tool.root_kind == "package" and tool.root is not None and tool.path is not None:
        row["package"] = tool.path.relative_to(tool.root).parts[0]  # .agent-apps/packages/NAME/...
    return row


def _summary(tool: ToolDef) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "kind": tool.kind,
        "source": tool.root_kind or _memory_source(tool),
        "path": str(tool.path) if tool.path else tool.uri,
        "tags": list(tool.tags),
        "hidden": tool.hidden or tool.metadata.get("role") == "middleware",  # (as index_cache.summary_of)
        **({"compiledFrom": tool.metadata["compiled-from"]} if tool.root_kind == "compiled"
           and isinstance(tool.metadata.get("compiled-from"), str) else {}),
    }


def list_tools(
    lookup: Lookup, *, query: str | None = None, tags: list[str] | None = None, include_hidden: bool = False
) -> tuple[list[dict[str, Any]], list[SkillLoadError]]:
    rows, problems = lookup.list_summaries()
    items = rows if include_hidden else [
        row for row in rows if not row["hidden"] and (row["kind"] != "memory" or not _callback_row(row))]
    if query or tags:
        items = [row for row in items if _row_matches(row, query, tags or [])]
    return items, problems


def _callback_row(row: dict[str, Any]) -> bool:
    """In-memory callback refs are plumbing (the agent's invokeRef/hookRef): listed only with hidden ones."""
    return row["kind"] == "memory" and "callback" in row["tags"]


def _row_matches(row: dict[str, Any], query: str | None, tags: list[str]) -> bool:
    if tags and not all(t in row["tags"] for t in tags):
        return False
    if query:
        q = query.lower()
        return q in row["name"].lower() or q in row["description"].lower()
    return True


def describe(tool: ToolDef, meta: dict[str, Any], chain: list[str], static: bool,
             params: dict[str, Any] | None, returns: dict[str, Any] | None) -> dict[str, Any]:
    info = summary(tool)
    info.update(
        {
            "allowed_tools": tool.allowed_tools,
            "params": params,
            "returns": returns,
            "metadata": {k: v for k, v in meta.items() if not k.startswith("$")},
            "chain": chain,
            "static": static,
        }
    )
    if tool.kind == "markdown":
        info["body_line"] = tool.body_line
    return info


def which(lookup: Lookup, name: str) -> list[dict[str, Any]]:
    """The winner first, then every definition it shadows."""
    rows: list[dict[str, Any]] = []
    for item in lookup.candidates(name, force_check=True):
        if isinstance(item, Broken):
            rows.append({"name": name, "path": str(item.path), "source": "broken", "error": str(item.error)})
        else:
            rows.append(summary(item))
    return rows
