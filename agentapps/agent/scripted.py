"""The `agent-scripted` provider loop: plays a script's turns instead of calling a model.

It speaks the same provider contract as any other provider (hooks, invokeRef), so a scripted
run exercises the whole agent. With `config.requests` (a file path) it appends what the model
would have received each turn as one JSON line: `{"skill", "turn", "system"?, "input": [...],
"tokens"}`. It keeps the conversation the model would see (a Converse-shaped view), so the
context window, `contextEdit` and budgets work offline: `tokens` is that view's estimated size.
A turn's `usage` is reported as the script gives it. When context editing needs a summary, the
next script turn is used if it is a `summary` turn (a recording has them), else one is made
offline.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentapps.agent.checkpoint import resumable_for
from agentapps.agent.context_edit import fit, settings
from agentapps.agent.context_view import View
from agentapps.agent.converse import INVOKE_TOOL
from agentapps.agent.script import Cursor, Turn, cursor_for
from agentapps.errors import ConfigError, ProviderError

if TYPE_CHECKING:
    from agentapps.context.context import Context


def _requests_log(path: Any, entry: dict[str, Any]) -> None:
    if not isinstance(path, str) or not path:
        return
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")


def _cursor(ctx: Context, config: dict[str, Any], skill: str) -> Cursor:
    script = config.get("script")
    if not isinstance(script, str) or not script:
        raise ConfigError(
            f"Skill '{skill}' uses the agent-scripted provider but names no script: set "
            "model.script (a path relative to the skill file) or pass --replay FILE.", skill=skill,
            setting=("model", "script"))
    cursor = cursor_for(ctx.globals, Path(script))
    cursor.begin_run()
    return cursor


async def run_scripted(ctx: Context, args: dict[str, Any]) -> Any:
    """Play turns until the agent's hook says stop, or a turn without code ends the run."""
    config = args.get("config") or {}
    skill = str(args.get("skillName") or "agent")
    invoke_ref, hook_ref = args["invokeRef"], args["hookRef"]
    cursor = _cursor(ctx, config, skill)
    model = str(config.get("id") or "")
    edit = settings(config, model, skill)

    async def hook(event: dict[str, Any]) -> dict[str, Any]:
        answer = await ctx.manager.invoke(hook_ref, event)
        return answer if isinstance(answer, dict) else {}

    async def summarize(prompt: str) -> tuple[str, dict[str, int], str | None]:
        ahead = cursor.turns[cursor.index] if cursor.index < len(cursor.turns) else None
        if ahead is not None and ahead.summary is not None:
            cursor.take()
            return ahead.summary, dict(ahead.usage), ahead.model or model
        return _offline_summary(prompt), {}, None

    pending: list[Any] = [args.get("userMessage") or ""]
    first = str(args.get("userMessage") or "") or "Carry out the task."
    view = View([{"role": "user", "content": [{"text": first}]}],
                len(str(args.get("prompt") or "")) + len(json.dumps(INVOKE_TOOL)))
    failed: list[tuple[int, str]] = []  # (turn, error) of the tool calls that failed since the last success
    turn = 0
    resumable = resumable_for(ctx, hook_ref)  # `agentapps run`'s own agent: checkpoints after each turn
    if resumable is not None and resumable.seed is not None:  # a resume: from the checkpoint's turn
        view.messages, turn, pending = list(resumable.seed["messages"]), int(resumable.seed["turn"]), []
        cursor.index = int(resumable.seed["provider"].get("cursor", cursor.index))
    while True:
        turn += 1
        await fit(view, edit, hook, summarize)
        tokens = view.sending()
        await hook({"type": "turn-start", "turnNumber": turn, "contextTokens": tokens, "model": model})
        _requests_log(config.get("requests"), {
            "skill": skill, "turn": turn, "input": pending, "tokens": tokens,
            **({"system": args.get("prompt")} if turn == 1 else {})})
        step = _model_turn(cursor)
        if step is None:
            asked = next((p for p in reversed(pending) if isinstance(p, str) and p), "")
            raise ProviderError(
                f"Script {cursor.path} has no turn left for '{skill}' (turn {turn}); the agent "
                f"wanted another model reply{': ' + _clause(asked) if asked else ''}{_failures(failed)}. "
                "Record a fresh script with --record.", skill=skill)
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.error is not None:
            directive = await hook({"type": "error", "error": step.error, "attempt": 1})
            if directive.get("retry"):
                await asyncio.sleep(float(directive.get("delay") or 0))
                pending = []
                continue
            raise ProviderError(f"Scripted model error: {step.error}", skill=skill)
        if step.text:
            await hook({"type": "message", "text": step.text})
        view.calibrate(step.usage)
        uses = [{"toolUse": {"toolUseId": f"t{turn}.{n}", "name": "invoke", "input": {"code": code}}}
                for n, code in enumerate(step.code)]
        view.messages.append({"role": "assistant", "content": (
            [{"text": step.text}] if step.text else []) + uses or [{"text": "(no reply)"}]})
        pending = []
        for code in step.code:
            call = {"type": "tool-call", "tool": "invoke", "args": {"code": code}}
            directive = await hook(call)
            if directive.get("deny"):
                result = {"status": "error", "text": f"Denied: {directive['deny']}"}
            else:
                result = await ctx.manager.invoke(invoke_ref, {"code": code})
                await hook({**call, "type": "tool-result", "result": result})
            why = _error(result)
            failed = [*failed, (turn, why)] if why else []
            pending.append(result)
        directive = await hook({"type": "turn-end", "turnNumber": turn, "result": step.text,
                                "usage": step.usage, "toolCalls": len(step.code),
                                "model": step.model or model})
        if directive.get("stop"):
            return directive.get("result", step.text)
        if directive.get("continue") and directive.get("message"):
            pending.append(directive["message"])
        if not directive.get("continue") and not step.code:
            return step.text
        view.messages.append({"role": "user", "content": _user_blocks(uses, pending)})
        if resumable is not None:
            resumable.save(turn, view.messages, {"cursor": cursor.index})


def _model_turn(cursor: Cursor) -> Turn | None:
    """The next model turn, passing over summary turns no compaction asked for this time."""
    while (step := cursor.take()) is not None and step.summary is not None:
        pass
    return step


def _user_blocks(uses: list[dict[str, Any]], pending: list[Any]) -> list[dict[str, Any]]:
    """The next user message of the view: a toolResult per tool call, then any text."""
    results = [r for r in pending if isinstance(r, dict)]
    blocks: list[dict[str, Any]] = [
        {"toolResult": {"toolUseId": use["toolUse"]["toolUseId"],
                        "content": [{"text": str(result.get("text", ""))}],
                        "status": "error" if result.get("status") == "error" else "success"}}
        for use, result in zip(uses, results, strict=False)]
    blocks += [{"text": p} for p in pending if isinstance(p, str) and p]
    return blocks or [{"text": "Continue."}]


def _offline_summary(prompt: str) -> str:
    """A stand-in for the model's summary when the script has none: the end of the old turns."""
    tail = prompt[-1500:]
    return f"(Summary made offline by agent-scripted from {len(prompt)} characters of old turns; " \
           f"they ended with:)\n{tail}"


def _error(result: Any) -> str:
    """What a failed tool result says went wrong; "" for a success."""
    if not isinstance(result, dict) or result.get("status") != "error":
        return ""
    text = str(result.get("text") or "failed")
    try:
        payload = json.loads(text)
    except ValueError:
        return text
    why = (payload.get("error") or payload.get("finishRefused")) if isinstance(payload, dict) else None
    return str(why or text)


def _failures(failed: list[tuple[int, str]]) -> str:
    """A clause naming the failure a run ended on: often the real cause of a script running out."""
    if not failed:
        return ""
    first_turn, first = failed[0]
    if len(failed) == 1:
        return f"; the last tool call failed: {_clause(first)}"
    return f"; the last {len(failed)} tool calls failed, the first (turn {first_turn}) with: {_clause(first)}"


def _clause(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters, without a closing full stop (the message adds one)."""
    one_line = " ".join(text.split()).rstrip(".")
    return one_line if len(one_line) <= limit else one_line[:limit] + "…"
