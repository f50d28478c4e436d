"""The shared vocabulary of the kernel: tool definitions, refs, frames, path entries. No logic."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from agentapps.core.shown import fields_repr

ToolKind = Literal["markdown", "code", "memory"]
# the project's own roots, then the skills folders other agents keep (agentapps.tools.skilldirs)
RootKind = Literal["compiled", "env", "project", "project-skills", "agents", "claude", "github", "package", "user", "user-agents",
                   "user-claude", "bundled"]


class ToolFn(Protocol):
    """What every tool is: `fn(ctx, args)`, sync or async; a non-None return sets the result.

    `ctx` is the call's `agentapps.context.context.Context`. A definition holds its function and a
    context holds its definition, so one of the two must name the other loosely: the definition,
    here below the context's layer, takes `ctx` as Any (a skill's own `run(ctx: Context, args)`
    is a ToolFn, which a narrower protocol would refuse)."""

    def __call__(self, ctx: Any, args: dict[str, Any], /) -> Any | Awaitable[Any]: ...


class ToolDef:
    """One skill as loaded from disk (or registered in memory)."""

    FIELDS = ("name", "kind", "frontmatter", "path", "body", "body_line", "fn", "uri", "root", "root_kind",
              "mtime_ns", "loop")
    __slots__ = (*FIELDS, "derived")
    name: str
    kind: ToolKind
    frontmatter: dict[str, Any]
    path: Path | None
    body: str
    body_line: int
    fn: ToolFn | None
    uri: str | None
    root: Path | None
    root_kind: RootKind | None
    mtime_ns: int
    loop: bool  # must run on an event loop (a code skill whose imports never wait need not)
    # what is worked out from this definition once (its cascade, chain plan, allowed-tools, policy
    # candidate): kept on the definition, not in a process-wide cache, so it lives exactly as long as
    # the definition does (a callback ref's, made per agent run, is freed with its run)
    derived: dict[str, Any]

    def __init__(self, name: str, kind: ToolKind, frontmatter: dict[str, Any], path: Path | None = None,
                 body: str = "", body_line: int = 1, fn: ToolFn | None = None, uri: str | None = None,
                 root: Path | None = None, root_kind: RootKind | None = None, mtime_ns: int = 0,
                 loop: bool = True) -> None:
        self.name, self.kind, self.frontmatter, self.path = name, kind, frontmatter, path
        self.body, self.body_line, self.fn, self.uri = body, body_line, fn, uri
        self.root, self.root_kind, self.mtime_ns, self.loop = root, root_kind, mtime_ns, loop
        self.derived = {}

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)

    def with_frontmatter(self, frontmatter: dict[str, Any]) -> ToolDef:
        """A copy of this definition with other frontmatter (everything else the same)."""
        return ToolDef(self.name, self.kind, frontmatter, self.path, self.body, self.body_line, self.fn, self.uri,
                       self.root, self.root_kind, self.mtime_ns, self.loop)

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.frontmatter.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def description(self) -> str:
        return str(self.frontmatter.get("description") or "")

    @property
    def allowed_tools(self) -> str | None:
        value = self.frontmatter.get("allowed-tools")
        return None if value is None else str(value)

    @property
    def params(self) -> dict[str, Any] | None:
        params = self.metadata.get("params")
        return params if isinstance(params, dict) else None

    @property
    def hidden(self) -> bool:
        return self.metadata.get("visibility") == "hidden"

    @property
    def tags(self) -> tuple[str, ...]:
        tags = self.metadata.get("tags")
        if not tags:
            return ()
        return tuple(str(t) for t in tags) if isinstance(tags, list) else (str(tags),)

    @property
    def is_main(self) -> bool:
        return self.metadata.get("role") == "main" or bool(self.metadata.get("main"))

    @property
    def where(self) -> str:
        return str(self.path) if self.path else (self.uri or self.name)


class PathEntry:
    """One root of the search path."""

    FIELDS = ("directory", "kind", "recursive", "max_depth", "ignore")
    __slots__ = FIELDS
    directory: Path
    kind: RootKind
    recursive: bool
    max_depth: int | None
    ignore: tuple[str, ...]

    def __init__(self, directory: Path, kind: RootKind, recursive: bool = True, max_depth: int | None = None,
                 ignore: tuple[str, ...] = ()) -> None:
        self.directory, self.kind, self.recursive, self.max_depth, self.ignore = (
            directory, kind, recursive, max_depth, ignore)

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


class HistoryFrame(NamedTuple):
    """One call on the history stack (a tuple: cheap, since every call pushes one)."""

    tool: str
    args: dict[str, Any]
    timestamp: float


class Event:
    """One event on a topic: what emit delivers to each subscriber."""

    FIELDS = ("id", "topic", "type", "timestamp", "source", "data", "root_context_id", "depth", "traceparent")
    __slots__ = FIELDS
    id: str
    topic: str
    type: str
    timestamp: float
    source: str | None
    data: Any
    root_context_id: str | None
    depth: int  # how many event handlers this emission is nested in (a re-emitting handler loops)
    traceparent: str | None  # the W3C trace context of the emitting call, when traces were on

    def __init__(self, id: str, topic: str, type: str, timestamp: float, source: str | None = None,
                 data: Any = None, root_context_id: str | None = None, depth: int = 0,
                 traceparent: str | None = None) -> None:
        self.id, self.topic, self.type, self.timestamp = id, topic, type, timestamp
        self.source, self.data, self.root_context_id, self.depth = source, data, root_context_id, depth
        self.traceparent = traceparent

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)


# One entry of a resolved chain: its definition, cascaded metadata (None when it interpolates the
# call), own plan, and whether it declares params (its metadata key is then its args). A plain
# tuple: a NamedTuple class costs its import time on every run.
ChainStep = tuple["ToolDef", "dict[str, Any] | None", "ChainPlan", bool]


class ChainPlan:
    """The resolved middleware chain of one tool: names in order, or static (fn called directly)."""

    FIELDS = ("entries", "static", "steps", "loop", "resolved_at", "ordered", "served")
    __slots__ = FIELDS
    entries: list[str]
    static: bool
    # per entry, as last resolved (re-resolved at the lookup's check interval), and whether any of
    # them must run on an event loop
    steps: list[ChainStep]
    loop: bool
    resolved_at: float
    # every middleware the metadata activates, in order, and the skill served: `entries` are those
    # that serve it (`applies-to`, `applies-if`), decided again with the steps, as a shadow may differ
    ordered: list[str]
    served: ToolDef | None

    def __init__(self, entries: list[str] | None = None, static: bool = False,
                 steps: list[ChainStep] | None = None, loop: bool = False, resolved_at: float = -1.0,
                 ordered: list[str] | None = None, served: ToolDef | None = None) -> None:
        self.entries = [] if entries is None else entries
        self.static = static
        self.steps = [] if steps is None else steps
        self.loop, self.resolved_at = loop, resolved_at
        self.ordered = list(self.entries) if ordered is None else ordered
        self.served = served

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)

