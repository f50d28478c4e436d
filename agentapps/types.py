"""The shared vocabulary of the kernel: tool definitions, refs, frames, path entries. No logic."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.tools.lookup import Lookup

ToolKind = Literal["markdown", "code", "memory"]
RootKind = Literal["env", "project", "project-skills", "user", "bundled"]


class ToolFn(Protocol):
    """What every tool is: `fn(ctx, args)`, sync or async; a non-None return sets the result."""

    def __call__(self, ctx: Context, args: dict[str, Any], /) -> Any | Awaitable[Any]: ...


class ToolProvider(Protocol):
    """Registers in-memory tools on demand (MCP servers' tools): `name` is the bare name or URI
    being resolved, None to register everything (listing); `fresh` asks to look again after a
    miss everywhere else."""

    def provide(self, lookup: Lookup, name: str | None, fresh: bool, /) -> None: ...

    def problems(self) -> list[str]:
        """What went wrong registering tools (shown by `agentapps list`, never fatal there)."""
        ...


@dataclass
class ToolDef:
    """One skill as loaded from disk (or registered in memory)."""

    name: str
    kind: ToolKind
    frontmatter: dict[str, Any]
    path: Path | None = None
    body: str = ""
    body_line: int = 1
    fn: ToolFn | None = None
    uri: str | None = None
    root: Path | None = None
    root_kind: RootKind | None = None
    mtime_ns: int = 0
    loop: bool = True  # must run on an event loop (a code skill whose imports never wait need not)

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


@dataclass(frozen=True)
class PathEntry:
    """One root of the search path."""

    directory: Path
    kind: RootKind
    recursive: bool = True
    max_depth: int | None = None
    ignore: tuple[str, ...] = ()


class HistoryFrame(NamedTuple):
    """One call on the history stack (a tuple: cheap, since every call pushes one)."""

    tool: str
    args: dict[str, Any]
    timestamp: float


@dataclass(frozen=True)
class Event:
    """One event on a topic: what emit delivers to each subscriber."""

    id: str
    topic: str
    type: str
    timestamp: float
    source: str | None = None
    data: Any = None
    root_context_id: str | None = None
    depth: int = 0  # how many event handlers this emission is nested in (a re-emitting handler loops)


# One entry of a resolved chain: its definition, cascaded metadata (None when it interpolates the
# call), own plan, and whether it declares params (its metadata key is then its args). A plain
# tuple: a NamedTuple class costs its import time on every run.
ChainStep = tuple["ToolDef", "dict[str, Any] | None", "ChainPlan", bool]


@dataclass
class ChainPlan:
    """The resolved middleware chain of one tool: names in order, or static (fn called directly)."""

    entries: list[str] = field(default_factory=list)
    static: bool = False
    # per entry, as last resolved (re-resolved at the lookup's check interval), and whether any of
    # them must run on an event loop
    steps: list[ChainStep] = field(default_factory=list)
    loop: bool = False
    resolved_at: float = -1.0


Reporter = Callable[[str, dict[str, Any]], None]
