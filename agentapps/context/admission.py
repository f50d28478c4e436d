"""Admission: what a call must pass before its context exists (abort, ref kind, depth, args), the
grants it is checked against, and the refusal of pipeline middleware called on their own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.errors import ArgsError, DeniedError, LimitError, UsageError
from agentapps.schemas.validation import MAX_ARGS_BYTES, MAX_STRING, walk_limits, within_limits
from agentapps.tools.names import ref_kind
from agentapps.tools.policy import Policy
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals


OPTIONS = ("context", "frontmatter")  # invoke options that args may carry as `$NAME`
UNTRUSTED_OPTIONS = ("frontmatter",)  # what agent code may pass (activation only: context/activate.py)
SEED_KEYS = ("nonlocals", "locals")  # what a context seed may lay over the new context
# what a seed may never set: the pipeline's own state (a forged `prompt` would replace a markdown
# skill's instructions; a forged `agent` scope would raise a sub-agent's limits)
RESERVED = {"locals": frozenset({"result", "error", "history", "config", "prompt", "agent", "session", "problems"}),
            "nonlocals": frozenset({"agent", "rootContextId"})}


def refuse_options(args: Any, who: str) -> None:
    """Args that come from outside (a server's client, an event's payload) carry no invoke options:
    a `$context` there would be someone else's seed laid over a trusted call."""
    if isinstance(args, dict):
        found = sorted(k for k in args if isinstance(k, str) and k.startswith("$"))
        if found:
            raise DeniedError(f"{who} may not pass invoke options in args ('{found[0]}').")


def split_options(caller: Context, args: Any, explicit: dict[str, Any] | None
                  ) -> tuple[Any, dict[str, Any] | None]:
    """Pull `$NAME` keys out of `args` as invoke options (`$context` -> `context`); None when the
    call has none.

    Explicit options win; when both are objects the `$NAME` value only fills missing fields. Agent
    code may pass only `$frontmatter`: a seed could otherwise forge the scope that bounds a sub-agent."""
    if not isinstance(args, dict) or not _has_options(args):
        return args, explicit
    if caller.untrusted and any(isinstance(k, str) and k.startswith("$") and k[1:] not in
                                         UNTRUSTED_OPTIONS for k in args):
        raise DeniedError("Agent code may not pass invoke options ($-keys) in args other than "
                          "$frontmatter.", skill=caller.tool.name)
    options = dict(explicit or {})
    plain: dict[str, Any] = {}
    for key, value in args.items():
        if not (isinstance(key, str) and key.startswith("$")):
            plain[key] = value
            continue
        name = key[1:]
        if name not in OPTIONS:
            known = ", ".join("$" + o for o in OPTIONS)
            raise ArgsError(f"Unknown invoke option '{key}' in args (args may carry {known}).")
        mine = options.get(name)
        if isinstance(mine, dict) and isinstance(value, dict):
            options[name] = {**value, **mine}
        elif mine is None:
            options[name] = value
    return plain, options


def _has_options(args: dict[Any, Any]) -> bool:
    for key in args:
        if isinstance(key, str) and key.startswith("$"):
            return True
    return False


def apply_seed(ctx: Context, seed: Any) -> None:
    """Lay an invoke's `context` seed over the new context: `nonlocals` and `locals` entries."""
    if seed is None:
        return
    if not isinstance(seed, dict) or any(k not in SEED_KEYS for k in seed):
        raise ArgsError(f"The context seed for '{ctx.tool.name}' must be an object with only "
                        f"{' and '.join(SEED_KEYS)}.", skill=ctx.tool.name)
    for key in SEED_KEYS:
        value = seed.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ArgsError(f"The context seed's {key} for '{ctx.tool.name}' must be an object.",
                            skill=ctx.tool.name)
        taken = sorted(str(k) for k in value if k in RESERVED[key] or str(k).startswith("_"))
        if taken:
            raise DeniedError(f"A context seed may not set {key}.{taken[0]} for '{ctx.tool.name}': it "
                              "belongs to the pipeline.", skill=ctx.tool.name)
        getattr(ctx, key).update(value)


def admit(caller: Context, ref: str | ToolDef, args: Any, untrusted: bool) -> ToolDef:
    """Resolve `ref` for a call from `caller` and refuse what may not be called at all."""
    g = caller.globals
    if g.signal.reason is not None:
        g.signal.raise_if_aborted()
    if isinstance(ref, str):
        # agent code's own calls name bare skills only; the skills they run are not agent code
        if (untrusted or caller.untrusted) and ref_kind(ref) != "name":
            raise DeniedError(f"Agent code may only call skills by bare name; '{ref[:80]}' is a path or URI.",
                              skill=caller.tool.name)
        tool = g.lookup.resolve(ref)
    else:
        tool = ref
    if caller.depth + 1 > g.config.max_depth:
        raise LimitError(f"Calling '{tool.name}' would nest deeper than {g.config.max_depth} skill calls; "
                         "look for a skill that calls itself.", skill=tool.name)
    if not isinstance(args, dict):
        raise ArgsError(f"Arguments for '{tool.name}' must be an object.", skill=tool.name)
    if not caller.trusted:  # middleware are trusted pipeline code (e.g. a long prompt for the agent)
        # the run's own args, whichever door brought them (a piped diff, say), may use the whole
        # 1 MiB: one limit for every door (schemas/validation.py)
        limit = MAX_ARGS_BYTES if caller.parent is None else MAX_STRING
        if not within_limits(args, limit):
            try:
                walk_limits(args, tool.name, limit)
            except ArgsError as exc:  # name the file of the skill the args were for
                if exc.file is None and tool.path is not None:
                    exc.file = str(tool.path)
                raise
    return tool


def policy_for(g: Globals, text: str | None, owner: str) -> Policy:
    """The parsed allowed-tools of `owner` (cached per process)."""
    cache = g.cache_for("policy")
    key = (text, owner)
    found = cache.get(key)
    if found is None:
        found = cache[key] = Policy.parse(text, owner)
    return found


def grants(caller: Context, tool: ToolDef, restrict: tuple[Policy, ...]
           ) -> tuple[tuple[Policy, ...], tuple[Policy, ...]]:
    """(what this call is checked against, what the callee's own calls are checked against).

    Only the immediate caller's grant applies — a helper acts under its own allowed-tools, as a
    function under its own body — and middleware, being trusted pipeline code, grant no checks."""
    own: Policy | None = tool.derived.get("policy")  # the definition's own, kept on it
    if own is None:
        try:
            own = tool.derived["policy"] = Policy.parse(tool.allowed_tools, tool.name)
        except UsageError as exc:  # a malformed allowed-tools pattern: point at the skill's file
            if exc.file is None and tool.path is not None:
                exc.file = str(tool.path)
            raise
    return (() if caller.trusted else caller.policies), (*restrict, own)


def refuse_pipeline_call(ctx: Context) -> None:
    """Standard middleware serve other skills' chains; called on their own they would serve nothing."""
    role = ctx.tool.metadata.get("role")
    if role == "pipeline" or (role == "middleware" and (ctx.chain.static or not ctx.tool.params)):
        raise UsageError(
            f"'{ctx.tool.name}' is pipeline middleware: it runs inside other skills' chains and cannot be "
            "run by itself ('agentapps describe SKILL' shows a skill's chain).",
            skill=ctx.tool.name,
        )
