"""Context editing for long agent runs (`model.contextEdit`): clear old tool results, then compact.

Before each model call a provider calls `fit(view, settings, hook, summarize)`:

1. past `clearAt` (a fraction of the context window), every tool result but the last
   `keepResults` is cleared down to its head and tail with a note of its original size;
2. past `compactAt`, the `context-full` hook event fires. Its answer may carry `summary` (and
   `keep`), used as is, or `stop`; otherwise `summarize(prompt)` asks the model for a summary in
   a separate call. The oldest turns, all but the last `keepTurns`, are replaced by that summary,
   appended to the first user message (the task), which is always kept.

Only the view is edited: the trace (and a session capturing it) keeps every event of the run.
Without `contextEdit` nothing is edited and the agent stops the run (exit 4) when a request
would not fit the window.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentapps.agent.context_view import View
from agentapps.agent.models import DEFAULT_WINDOW, facts
from agentapps.errors import ConfigError, LimitError

if TYPE_CHECKING:
    from agentapps.context.context import Context

CLEARED = "[cleared by context editing: the full result was {n} characters; the middle is omitted]"
SUMMARY_HEAD = "[Summary of the earlier turns of this conversation, written when they were compacted]\n"
SUMMARY_SYSTEM = (
    "You compact the conversation of an AI agent that works by running JavaScript tool calls. "
    "Write a summary the agent can continue from: what the task is, what it has found and "
    "decided, results it will still need (exact values, names, paths), what is done and what "
    "remains. Plain text, at most 400 words; do not call tools.")
MAX_SUMMARY_INPUT = 200_000  # characters of old turns sent to the summary call
PER_ITEM = 2_000  # characters of one old message, tool call or result in that input
HOOK_TEXT = 60_000  # the old turns as the `context-full` event shows them (under the args limit)

Hook = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Summarize = Callable[[str], Awaitable[tuple[str, dict[str, int], str | None]]]


@dataclass(frozen=True)
class EditSettings:
    """How the agent clears old tool results from a long conversation (model.contextEdit)."""

    enabled: bool
    window: int
    clear_at: float = 0.5
    compact_at: float = 0.8
    keep_results: int = 3
    keep_turns: int = 4
    cleared_chars: int = 300


def window_of(config: Mapping[str, Any], model_id: str, skill: str | None = None) -> int:
    """`model.contextWindow`, else the model's window from the table, else 200 000 tokens."""
    value = config.get("contextWindow")
    if value is None:
        found = facts(model_id)
        return found.window if found else DEFAULT_WINDOW
    if isinstance(value, bool) or not isinstance(value, int) or value < 1000:
        raise ConfigError(f"Skill '{skill}' model.contextWindow must be a whole number of tokens "
                          f">= 1000, not {value!r}.", skill=skill,
                          setting=("model", "contextWindow"))
    return value


def settings(config: Mapping[str, Any], model_id: str, skill: str | None = None) -> EditSettings:
    raw = config.get("contextEdit", False)
    window = window_of(config, model_id, skill)
    if isinstance(raw, bool):
        return EditSettings(raw, window)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"Skill '{skill}' model.contextEdit must be true, false or an object "
                          "like {clearAt: 0.5, compactAt: 0.8}.", skill=skill,
                          setting=("model", "contextEdit"))
    defaults = EditSettings(True, window)
    values: dict[str, Any] = {}
    for key, attr, low, high in (("clearAt", "clear_at", 0.05, 1.0), ("compactAt", "compact_at", 0.05, 1.0),
                                 ("keepResults", "keep_results", 0, 1000), ("keepTurns", "keep_turns", 0, 1000),
                                 ("clearedChars", "cleared_chars", 0, 100_000)):
        value = raw.get(key, getattr(defaults, attr))
        whole = attr.startswith(("keep", "cleared"))
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) \
                or not low <= value <= high:
            kind = "a whole number" if whole else "a fraction"
            raise ConfigError(f"Skill '{skill}' model.contextEdit.{key} must be {kind} from {low:g} "
                              f"to {high:g}, not {value!r}.", skill=skill,
                              setting=("model", "contextEdit", key))
        values[attr] = value
    return EditSettings(True, window, **values)


def clear_results(messages: list[dict[str, Any]], keep: int, cleared_chars: int) -> int:
    """Clear every tool result but the last `keep` to head + note + tail; returns how many."""
    spots = [(i, j) for i, m in enumerate(messages) if m.get("role") == "user"
             for j, b in enumerate(m.get("content", ())) if "toolResult" in b]
    count = 0
    for i, j in spots[: max(len(spots) - keep, 0)]:
        result = messages[i]["content"][j]["toolResult"]
        items = [_cleared(item, cleared_chars) for item in result.get("content", [])]
        if items != result.get("content"):
            content = list(messages[i]["content"])
            content[j] = {"toolResult": {**result, "content": items}}
            messages[i] = {**messages[i], "content": content}
            count += 1
    return count


def _cleared(item: dict[str, Any], keep: int) -> dict[str, Any]:
    text = item.get("text")
    if not isinstance(text, str) or "[cleared by context editing" in text:
        return item
    note = CLEARED.format(n=len(text))
    if len(text) <= keep + len(note) + 2:
        return item
    head = keep // 2
    return {**item, "text": f"{text[:head]}\n{note}\n{text[len(text) - (keep - head):]}"}


@dataclass
class Compaction:
    """The oldest turns of a view and how to put a summary in their place."""

    first: dict[str, Any]
    old: list[dict[str, Any]]
    kept: list[dict[str, Any]]

    @property
    def turns(self) -> int:
        return sum(1 for m in self.old if m.get("role") == "assistant")

    def prompt(self) -> str:
        """The text the summary call reads: the task, an earlier summary, then the old turns."""
        task = [b["text"] for b in self.first.get("content", ()) if "text" in b]
        parts = ["The task the agent was given:\n" + _cut("\n".join(t for t in task if not t.startswith(SUMMARY_HEAD)),
                                                          PER_ITEM * 2)]
        parts += [t[len(SUMMARY_HEAD):] for t in task if t.startswith(SUMMARY_HEAD)]
        for message in self.old:
            for block in message.get("content", ()):
                parts.append(_render(message.get("role", ""), block))
        return _cut("\n\n".join(parts), MAX_SUMMARY_INPUT)

    def apply(self, summary: str) -> list[dict[str, Any]]:
        content = [b for b in self.first.get("content", ()) if not str(b.get("text", "")).startswith(SUMMARY_HEAD)]
        merged = {**self.first, "content": [*content, {"text": SUMMARY_HEAD + summary}]}
        return [merged, *self.kept]


def plan_compaction(messages: list[dict[str, Any]], keep_turns: int) -> Compaction | None:
    """Split after the first message, at an assistant message, keeping `keep_turns` exchanges."""
    cut = max(1, len(messages) - 2 * keep_turns)
    while cut < len(messages) and messages[cut].get("role") != "assistant":
        cut += 1
    if cut <= 1 or cut >= len(messages):
        return None
    return Compaction(messages[0], messages[1:cut], messages[cut:])


def _render(role: str, block: Mapping[str, Any]) -> str:
    if "toolUse" in block:
        code = block["toolUse"].get("input", {})
        code = code.get("code", code) if isinstance(code, Mapping) else code
        return "Agent ran code:\n" + _cut(str(code), PER_ITEM)
    if "toolResult" in block:
        texts = [str(i.get("text", i)) for i in block["toolResult"].get("content", [])]
        return "Result:\n" + _cut("\n".join(texts), PER_ITEM)
    who = "Agent" if role == "assistant" else "User"
    return f"{who}: " + _cut(str(block.get("text", "")), PER_ITEM)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    return f"{text[:head]}\n[... {len(text) - limit} characters omitted ...]\n{text[len(text) - (limit - head):]}"


async def fit(view: View, s: EditSettings, hook: Hook, summarize: Summarize) -> None:
    """Edit `view` in place so the next request fits (see the module doc); no-op when disabled."""
    if not s.enabled:
        return
    before = view.estimate()
    if before > s.clear_at * s.window:
        cleared = clear_results(view.messages, s.keep_results, s.cleared_chars)
        if cleared:
            view.edited()
            after = view.estimate()
            await hook({"type": "context-edit", "action": "clear", "cleared": cleared,
                        "before": before, "after": after})
            before = after
    if before <= s.compact_at * s.window:
        return
    plan = plan_compaction(view.messages, s.keep_turns)
    directive = await hook({"type": "context-full", "tokens": before, "limit": int(s.compact_at * s.window),
                            "window": s.window, "turns": plan.turns if plan else 0,
                            "conversation": _cut(plan.prompt(), HOOK_TEXT) if plan else ""})
    keep = directive.get("keep")
    if isinstance(keep, int) and not isinstance(keep, bool) and keep >= 0 and keep != s.keep_turns:
        plan = plan_compaction(view.messages, keep)
    if plan is None:
        return  # nothing old enough to summarize: the window check decides
    given = directive.get("summary")
    report: dict[str, int] = {}
    model = None
    if isinstance(given, str) and given.strip():
        summary = given
    else:
        summary, report, model = await summarize(plan.prompt())
    view.messages[:] = plan.apply(summary)
    view.edited()
    await hook({"type": "context-edit", "action": "summarize", "turns": plan.turns, "before": before,
                "after": view.estimate(), "usage": report, "model": model,
                "by": "hook" if isinstance(given, str) and given.strip() else "model",
                "summary": _cut(summary, 4_000)})


async def ask_context_full(ctx: Context, decider: str, run: Any, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Ask the `model.contextFull` skill what to do; it may answer `{summary, keep}` or `{stop}`."""
    verdict = await ctx.manager.invoke(decider, {"skillName": run.skill, **{
        k: event.get(k) for k in ("tokens", "limit", "window", "turns", "conversation")}})
    if not isinstance(verdict, Mapping):
        return None
    if verdict.get("stop"):
        run.stop_reason = "context_full"
        raise LimitError(f"The agent for '{run.skill}' was stopped by '{decider}' when its "
                         f"conversation filled the context budget: {verdict['stop']}", skill=run.skill)
    answer = {k: verdict[k] for k in ("summary", "keep") if k in verdict}
    return answer or None
