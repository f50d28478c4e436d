"""The context every call carries: envelope, args (set once), run, locals, nonlocals, globals, manager."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.core.shown import fields_repr
from agentapps.errors import RunInterruptedError
from agentapps.runstate import Internals
from agentapps.types import ChainPlan, HistoryFrame, ToolDef

if TYPE_CHECKING:
    from agentapps.cascade.resolve import Cascaded
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


class _Locals(Namespace):
    """A context's locals: `history` (the call stack) is computed when first read."""

    __slots__ = ("_ctx",)

    def __missing__(self, key: str) -> Any:
        if key == "history":
            ctx = object.__getattribute__(self, "_ctx")
            found = self["history"] = ctx._history()
            return found
        raise KeyError(key)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:  # e.g. `session` when the session key resolved to nothing
            raise AttributeError(f"ctx.locals has no {name!r} in this call (read it with "
                                 f"ctx.locals.get({name!r}) where it may be unset)") from None


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
            raise RunInterruptedError(self.reason, signal_number=self.signal_number)


class Config:
    """Process-wide configuration computed by bootstrap."""

    FIELDS = ("cwd", "project", "bundled", "main_tool", "overrides", "max_depth")
    __slots__ = FIELDS
    cwd: Path
    project: Path | None
    bundled: Path
    main_tool: ToolDef | None
    overrides: dict[str, Any]
    max_depth: int

    def __init__(self, cwd: Path, project: Path | None, bundled: Path, main_tool: ToolDef | None = None,
                 overrides: dict[str, Any] | None = None, max_depth: int = 16) -> None:
        self.cwd, self.project, self.bundled, self.main_tool = cwd, project, bundled, main_tool
        self.overrides = {} if overrides is None else overrides
        self.max_depth = max_depth

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)

    @property
    def data_dir(self) -> Path:
        """`.agent-apps/` of the project (or of the working directory when there is no project)."""
        return (self.project or self.cwd) / ".agent-apps"

    @property
    def log_dir(self) -> Path:
        """Where the run log lives: the project's `.agent-apps/`, else the user's `~/.agent-apps/`
        (a run outside any project must not leave a folder in whatever directory it ran in)."""
        return self.data_dir if self.project is not None else Path.home() / ".agent-apps"


class Globals:
    """What every context of one process's run shares: config, lookup, caches, signal, internals."""

    FIELDS = ("config", "lookup", "cache", "internals", "signal", "_ids", "_prefix")
    __slots__ = FIELDS
    config: Config
    lookup: Lookup
    cache: dict[str, dict[Any, Any]]
    internals: Internals
    signal: Signal
    _ids: Any
    _prefix: str

    def __init__(self, config: Config, lookup: Lookup, cache: dict[str, dict[Any, Any]] | None = None,
                 internals: Internals | None = None, signal: Signal | None = None, _ids: Any = None,
                 _prefix: str | None = None) -> None:
        self.config, self.lookup = config, lookup
        self.cache = {} if cache is None else cache
        self.internals = Internals() if internals is None else internals
        self.signal = Signal() if signal is None else signal
        self._ids = itertools.count(1) if _ids is None else _ids
        self._prefix = os.urandom(3).hex() if _prefix is None else _prefix

    def __repr__(self) -> str:
        return fields_repr(self, self.FIELDS)

    def served(self, signal: Signal | None = None) -> Globals:
        """These globals for one run a server serves: its own signal and internals (`Internals.served`),
        the rest shared (caches, lookup, config, and the id counter: contexts' ids stay unique in the
        process)."""
        return Globals(self.config, self.lookup, self.cache, self.internals.served(),
                       Signal() if signal is None else signal, self._ids, self._prefix)

    def cache_for(self, name: str) -> dict[Any, Any]:
        return self.cache.setdefault(name, {})


if TYPE_CHECKING:  # what `ctx.envelope` and `ctx.run` offer: views of the context's own fields
    from typing import Protocol

    class Envelope(Protocol):
        """Who a call is: its id, its caller (`parent`), the context it serves (`target`, itself unless
        it is a chain entry), the shared cancellation signal, whether it is agent code, its depth."""

        parent: Context | None
        target: Context
        signal: Signal
        untrusted: bool
        depth: int

        @property
        def id(self) -> str: ...


    class Run(Protocol):
        """The kernel's own state of one call: its tool, cascaded metadata, chain and policy view."""

        tool: ToolDef
        meta: dict[str, Any]
        chain: ChainPlan
        entry: bool
        # calls made from this context are trusted pipeline calls (chain entries always are; the agent
        # marks itself so for its provider calls): no caller's allowed-tools, no arg size limits
        trusted: bool
        chain_index: int  # a chain entry's position in its owner's chain
        # allowed-tools: the immediate caller's grant (checked for this call), and the grant this
        # context's own calls are checked against (this skill's allowed-tools, plus any restriction)
        caller_policies: tuple[Any, ...]
        policies: tuple[Any, ...]
        # the call's arguments as its skill normalises them for permission checks (tools.views):
        # kept here, where no caller's context seed can reach, never in `locals`
        view: dict[str, Any] | None
        cascade: Cascaded | None  # the tool's cascade as prepare() found it


_NO_PLAN = ChainPlan()  # until prepare() fills it in
_NO_META: dict[str, Any] = {}
_MANAGER: list[Callable[[Context], ContextManager]] = []  # the manager class, bound by context.manager


def bind_manager(factory: Callable[[Context], ContextManager]) -> None:
    """context.manager gives every context its manager (made when first used) through this."""
    _MANAGER[:] = [factory]


class Context:
    """One call. `ctx.envelope` (who the call is) and `ctx.run` (the kernel's state of it) are views
    of the context's own fields: one object per call, since every middleware of every call gets
    one. This module knows nothing of the onion: `manager` comes from `agentapps.context.manager`,
    made when first used, as are `locals` and `nonlocals` (most middleware never touch their own)."""

    __slots__ = ("_args", "_locals", "_manager", "_nonlocals", "_result", "_serial", "_span", "_started",
                 "caller_policies", "cascade", "chain", "chain_index", "depth", "entry", "globals", "meta", "parent", "policies", "signal",
                 "target", "tool", "trusted", "untrusted", "view")
    globals: Globals
    parent: Context | None
    target: Context
    signal: Signal
    untrusted: bool
    depth: int
    tool: ToolDef
    meta: dict[str, Any]
    chain: ChainPlan
    entry: bool
    trusted: bool
    chain_index: int
    caller_policies: tuple[Any, ...]
    policies: tuple[Any, ...]
    view: dict[str, Any] | None
    cascade: Cascaded | None
    _span: Any  # the call's trace span, set only when traces are on (agentapps/telemetry)
    _locals: Namespace | None
    _manager: ContextManager | None
    _nonlocals: Namespace | None
    _result: Any  # `locals.result` until `locals` is first read (context.manager.set_result)

    def __init__(self, tool: ToolDef, args: dict[str, Any], parent: Context | None, globals_: Globals,
                 target: Context | None = None, untrusted: bool = False) -> None:
        """`target`: the call this context serves as middleware."""
        self._serial = next(globals_._ids)
        self.globals = globals_
        self.parent = parent
        self.signal = globals_.signal
        self.untrusted = untrusted
        self._args = args
        self.tool = tool
        self.meta = _NO_META
        self.chain = _NO_PLAN
        self.chain_index = -1
        self.caller_policies = self.policies = ()
        self.view = self.cascade = self._locals = self._manager = self._result = None
        self._started = time.time()
        if target is not None:  # middleware: trusted pipeline code, sharing the served call's nonlocals
            self.entry = self.trusted = True
            self.target = target
            self.depth = parent.depth + 1  # type: ignore[union-attr]
            self._nonlocals = None
            return
        self.entry = self.trusted = False
        self.target = self
        # a snapshot of the caller's nonlocals as they are when the call starts; a caller that has
        # not touched its own yet holds what its caller had, so that is copied on first use
        if parent is None:
            self.depth = 0
            self._nonlocals = Namespace(rootContextId=self.id)
        else:
            self.depth = parent.depth + 1
            self._nonlocals = None if parent._nonlocals is None else Namespace(parent._nonlocals)

    @property
    def envelope(self) -> Envelope:
        return self

    @property
    def run(self) -> Run:
        return self

    @property
    def id(self) -> str:
        """Unique per process run (formatted only when asked for: most calls never are)."""
        return f"{self.globals._prefix}-{self._serial}"

    @property
    def manager(self) -> ContextManager:
        found = self._manager
        if found is None:
            found = self._manager = _MANAGER[0](self)
        return found

    @property
    def locals(self) -> Namespace:
        """Per-call scratch: `result`, `error`, `history` (the call stack), `config`, `prompt`."""
        found = self._locals
        if found is None:
            tool = self.tool
            found = self._locals = _Locals(result=self._result, error=None, config=Namespace())
            object.__setattr__(found, "_ctx", self)
            if tool.kind == "markdown":
                # directives rewrite `expanded`; agent-execute sends it to the model
                found.prompt = Namespace(raw=tool.body, expanded=tool.body, line=tool.body_line)
        return found

    @property
    def nonlocals(self) -> Namespace:
        """Inherited scratch: a shallow copy of the caller's, taken when the call started."""
        found = self._nonlocals
        if found is None:
            parent = self.parent
            found = self._nonlocals = Namespace(parent.nonlocals) if parent is not None else Namespace()
        return found

    def _history(self) -> list[HistoryFrame]:
        frames: list[HistoryFrame] = []
        node: Context | None = self
        while node is not None:
            frames.append(HistoryFrame(node.tool.name, node._args, node._started))
            node = node.parent
        frames.reverse()
        return frames

    @property
    def args(self) -> dict[str, Any]:
        return self._args

    @property
    def config(self) -> Namespace:
        return self.locals["config"]  # type: ignore[no-any-return]

    def __path_get__(self, name: str, default: Any) -> Any:
        if name in ("args", "locals", "nonlocals", "meta", "config"):
            return getattr(self, name)
        if name == "target":
            return self.target
        if name == "tool":
            return {"name": self.tool.name, "path": str(self.tool.path or ""), "description": self.tool.description}
        if name == "envelope":
            return {"id": self.id, "depth": self.depth}
        return default

    def __repr__(self) -> str:
        return f"<Context {self.tool.name} {self.envelope.id}>"
