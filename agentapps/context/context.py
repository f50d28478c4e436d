"""The context every call carries: envelope, args (set once), run, locals, nonlocals, globals, manager."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.errors import InterruptedError_
from agentapps.types import ChainPlan, HistoryFrame, ToolDef

if TYPE_CHECKING:
    from agentapps.context.manager import ContextManager
    from agentapps.tools.lookup import Lookup


class Namespace(dict[str, Any]):
    """A dict that also reads and writes as attributes (`ctx.locals.result`)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


class Signal:
    """Cancellation shared by a call and everything it calls."""

    __slots__ = ("reason", "signal_number")

    def __init__(self) -> None:
        self.reason: str | None = None
        self.signal_number = 2

    @property
    def aborted(self) -> bool:
        return self.reason is not None

    def abort(self, reason: str = "Interrupted.", signal_number: int = 2) -> None:
        if self.reason is None:
            self.reason, self.signal_number = reason, signal_number

    def raise_if_aborted(self) -> None:
        if self.reason is not None:
            raise InterruptedError_(self.reason, signal_number=self.signal_number)


@dataclass
class Config:
    """Process-wide configuration computed by bootstrap."""

    cwd: Path
    project: Path | None
    bundled: Path
    main_tool: ToolDef | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    max_depth: int = 16

    @property
    def data_dir(self) -> Path:
        """`.agent-apps/` of the project (or of the working directory when there is no project)."""
        return (self.project or self.cwd) / ".agent-apps"


@dataclass
class Globals:
    config: Config
    lookup: Lookup
    cache: dict[str, dict[Any, Any]] = field(default_factory=dict)
    internals: dict[str, Any] = field(default_factory=dict)
    signal: Signal = field(default_factory=Signal)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _prefix: str = field(default_factory=lambda: os.urandom(3).hex())

    def new_id(self) -> str:
        """Unique per process run; cheaper than a uuid per context."""
        return f"{self._prefix}-{next(self._ids)}"

    def cache_for(self, name: str) -> dict[Any, Any]:
        return self.cache.setdefault(name, {})


@dataclass(slots=True)
class Envelope:
    id: str
    parent: Context | None
    target: Context
    signal: Signal
    untrusted: bool = False
    depth: int = 0


@dataclass(slots=True)
class Run:
    tool: ToolDef
    meta: dict[str, Any]
    chain: ChainPlan
    entry: bool = False
    # calls made from this context are trusted pipeline calls (chain entries always are; the agent
    # marks itself so for its provider calls): no caller's allowed-tools, no arg size limits
    trusted: bool = False
    chain_index: int = -1  # a chain entry's position in its owner's chain
    stopped: bool = False  # a chain entry returned a value: the rest of this chain does not run
    # allowed-tools: the immediate caller's grant (checked for this call), and the grant this
    # context's own calls are checked against (this skill's allowed-tools, plus any restriction)
    caller_policies: tuple[Any, ...] = ()
    policies: tuple[Any, ...] = ()


class Context:
    """One call. Contexts are made by `agentapps.context.manager.new_context`, which gives each
    its `manager`; this module knows nothing of the onion."""

    __slots__ = ("_args", "envelope", "globals", "locals", "manager", "nonlocals", "run")
    envelope: Envelope
    run: Run
    locals: Namespace
    nonlocals: Namespace
    globals: Globals
    manager: ContextManager

    def __init__(
        self, *, tool: ToolDef, args: dict[str, Any], parent: Context | None, globals_: Globals,
        target: Context | None = None, untrusted: bool = False,
    ) -> None:
        depth = 0 if parent is None else parent.envelope.depth + 1
        self.envelope = Envelope(globals_.new_id(), parent, target or self, globals_.signal, untrusted, depth)
        self._args = args
        self.run = Run(tool, {}, ChainPlan(), entry=target is not None, trusted=target is not None)
        frame = HistoryFrame(tool.name, args, time.time())
        history = [frame] if parent is None else [*parent.locals["history"], frame]
        self.locals = Namespace(result=None, error=None, history=history, config=Namespace())
        if tool.kind == "markdown":
            # directives rewrite `expanded`; agent-execute sends it to the model
            self.locals.prompt = Namespace(raw=tool.body, expanded=tool.body, line=tool.body_line)
        self.nonlocals = Namespace(parent.nonlocals) if parent is not None else Namespace()
        if parent is None:
            self.nonlocals.setdefault("rootContextId", self.envelope.id)
        self.globals = globals_

    @property
    def args(self) -> dict[str, Any]:
        return self._args

    @property
    def target(self) -> Context:
        return self.envelope.target

    @property
    def tool(self) -> ToolDef:
        return self.run.tool

    @property
    def meta(self) -> dict[str, Any]:
        return self.run.meta

    @property
    def config(self) -> Namespace:
        return self.locals["config"]  # type: ignore[no-any-return]

    def __path_get__(self, name: str, default: Any) -> Any:
        if name in ("args", "locals", "nonlocals", "meta", "config"):
            return getattr(self, name)
        if name == "target":
            return self.envelope.target
        if name == "tool":
            return {"name": self.tool.name, "path": str(self.tool.path or ""), "description": self.tool.description}
        if name == "envelope":
            return {"id": self.envelope.id, "depth": self.envelope.depth}
        return default

    def __repr__(self) -> str:
        return f"<Context {self.tool.name} {self.envelope.id}>"
