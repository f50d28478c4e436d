"""What traces read of a skill call. `agentapps.context.context.Context` is the one kind of call;
it sits above this package, so the spans see it through these protocols."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentapps.runstate import Internals


class Skill(Protocol):
    """The skill a call serves (`agentapps.types.ToolDef`)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def uri(self) -> str | None: ...


class Shared(Protocol):
    """What the calls of one run share (`agentapps.context.context.Globals`)."""

    @property
    def internals(self) -> Internals: ...


class Call(Protocol):
    """One call: its skill, its caller, its depth and id, and the span kept on it (`_span`)."""

    _span: Any

    @property
    def tool(self) -> Skill: ...

    @property
    def globals(self) -> Shared: ...

    @property
    def parent(self) -> Call | None: ...

    @property
    def depth(self) -> int: ...

    @property
    def untrusted(self) -> bool: ...

    @property
    def id(self) -> str: ...
