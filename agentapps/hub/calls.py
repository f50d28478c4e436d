"""The hub skills' one entry: the project and its main skill's metadata from the context, then the
operation. A project is the folder bootstrap found, else the working folder (which `add` makes one)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import ArgsError
from agentapps.hub import ops

if TYPE_CHECKING:
    from agentapps.context.context import Context

OPERATIONS = ("add-source", "install", "add", "remove", "update", "list", "search")


def hub_operation(ctx: Context, operation: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one hub operation for the project `ctx` runs in: {results, text}."""
    config = ctx.globals.config
    project = Path(config.project or config.cwd)
    meta = config.main_tool.metadata if config.main_tool is not None else None
    deps = bool(args.get("installDeps"))
    if operation == "add-source":
        return ops.add_source(project, args["source"], name=args.get("name"), path=args.get("path"),
                              ref=args.get("ref"), install_deps=deps, cwd=Path(config.cwd))
    if operation == "install":
        return ops.install(project, frozen=bool(args.get("frozen")), install_deps=deps)
    if operation == "add":
        return ops.hub_add(project, meta, args["name"], install_deps=deps)
    if operation == "remove":
        return ops.hub_remove(project, meta, args["name"])
    if operation == "update":
        return ops.hub_update(project, meta, list(args.get("names") or []), install_deps=deps)
    if operation == "list":
        return ops.hub_list(project)
    if operation == "search":
        return ops.hub_search(project, meta, str(args.get("query") or ""))
    raise ArgsError(f"Unknown hub operation {operation!r}: one of {', '.join(OPERATIONS)}.")
