"""The `invoke` tool: run one snippet of agent code in the sandbox and shape the result for the model.

What the invokeRef callback answers, for any provider: `{"status": "success" | "error", "text":
...}`. `text` is what the model should see (a JSON object, truncated to `maxResultChars` with
head and tail kept); `status` says whether to flag the tool result as an error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from agentapps.agent.state import AgentRun
from agentapps.errors import AgentAppsError
from agentapps.sandbox.snippet import NEXT

NextFn = Callable[[], Awaitable[Any]]

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.sandbox import Sandbox


class BridgeError(Exception):
    """A failed skill call from agent code, worded for the model (it becomes a JS Error)."""


def truncate(text: str, limit: int) -> str:
    """Keep the head and tail of `text` within `limit` characters, noting the original size."""
    if len(text) <= limit:
        return text
    note = f"\n[... truncated: the full result was {len(text)} characters; the middle is omitted ...]\n"
    keep = max(limit - len(note), 0)
    head = keep // 2
    return text[:head] + note + text[len(text) - (keep - head):]


def tool_result(ok: bool, payload: dict[str, Any], limit: int) -> dict[str, Any]:
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return {"status": "success" if ok else "error", "text": truncate(text, limit)}


async def cancellable(snippet: Coroutine[Any, Any, dict[str, Any]], watch: Callable[[asyncio.Task[Any] | None], None],
                      refusal: str, limit: int) -> dict[str, Any]:
    """Run one snippet as a task `watch` is shown (and told of its end, with None), so that the
    task's cancel stops just this snippet: the model then gets `refusal` as its result. A cancel of
    the run itself goes on up."""
    task = asyncio.ensure_future(snippet)
    watch(task)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the run itself is being cancelled
        return tool_result(False, {"ok": False, "error": refusal}, limit)
    finally:
        watch(None)


def bridge(code_ctx: Context, next_fn: NextFn | None = None) -> Any:
    """The sandbox's `ctx.manager.invoke`: a full-pipeline call from the untrusted code context;
    and, when the agent serves middleware, `target.manager.next()` (arriving as NEXT)."""

    async def call(name: str, args: Any) -> Any:
        try:
            if name == NEXT:
                if next_fn is None:
                    raise BridgeError("target.manager.next() exists only when the agent serves a "
                                      "middleware skill.")
                return await next_fn()
            return await code_ctx.manager.invoke(name, {} if args is None else args, untrusted=True)
        except AgentAppsError as exc:
            if exc.exit_code >= 128:  # interrupted: not something agent code may catch
                raise
            raise BridgeError(f"{type(exc).__name__.rstrip('_')}: {exc.message}") from None

    return call


async def run_code(run: AgentRun, sandbox: Sandbox, code_ctx: Context, args: Any,
                   next_fn: NextFn | None = None) -> dict[str, Any]:
    """Admit, run and report one `invoke` call; limits that end the run raise."""
    limit = run.limits.max_result_chars
    code = args.get("code") if isinstance(args, dict) else None
    if not isinstance(code, str) or not code.strip():
        return tool_result(False, {"ok": False, "error": "invoke needs `code`: a non-empty string "
                                   "of JavaScript (the body of an async function)."}, limit)
    refusal = run.admit_code(code)
    if refusal is not None:
        return tool_result(False, {"ok": False, "error": refusal}, limit)
    outcome = await sandbox.run(code, bridge(code_ctx, next_fn))
    payload: dict[str, Any] = {"ok": outcome.ok}
    if outcome.ok:
        payload["result"] = outcome.value
    else:
        err = outcome.error or {}
        payload["error"] = f"{err.get('type', 'runtime')}: {err.get('message', 'failed')}"
    if outcome.logs:
        payload["console"] = outcome.logs
    if outcome.finished:
        problem = run.accept_finish(outcome.finish_value)
        if problem is None:
            payload["finished"] = True
        else:
            payload["ok"], payload["finishRefused"] = False, problem
    return tool_result(bool(payload["ok"]), payload, limit)
