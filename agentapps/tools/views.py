"""What permission checks see of a call: the callee as a Candidate, and its normalised arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from agentapps.tools.loader import load_policy_view
from agentapps.tools.policy import Candidate

if TYPE_CHECKING:
    from agentapps.types import ToolDef


class Context(Protocol):
    """What the checks read of a call (`agentapps.context.context.Context`, which sits above
    this package): its skill, its arguments and the view kept on it."""

    view: dict[str, Any] | None

    @property
    def tool(self) -> ToolDef: ...

    @property
    def args(self) -> dict[str, Any]: ...


def candidate(ctx: Context) -> Candidate:
    """The skill `ctx` serves, with the action arguments it declares (`metadata.action-args`);
    made once per definition (every call is checked by allowed-tools and trust), and kept on it."""
    tool = ctx.tool
    found: Candidate | None = tool.derived.get("candidate")
    if found is None:
        action = tool.metadata.get("action-args")
        keys = tuple(str(k) for k in action) if isinstance(action, list) else ()
        found = tool.derived["candidate"] = Candidate(tool.name, tool.tags, tool.hidden, keys)
    return found


def checked_view(ctx: Context) -> dict[str, Any]:
    """The view the permission checks of this call saw ({} when none was computed)."""
    return ctx.view or {}


def policy_args(ctx: Context) -> dict[str, Any]:
    """The call's arguments as the skill normalises them for policy (computed once per call).

    A code skill may define `policy_view(ctx, args)` returning its arguments with every spelling
    of the action folded into one (a resolved project-relative path, the commands a shell line runs),
    so a constraint binds what really runs rather than one way of writing it."""
    cached = ctx.view
    if cached is not None:
        return cached
    view_fn = load_policy_view(ctx.tool)
    view = dict(ctx.args) if view_fn is None else dict(view_fn(ctx, dict(ctx.args)))
    ctx.view = view
    return view
