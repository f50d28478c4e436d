"""The `agent-bedrock` provider loop: Bedrock Converse streaming through agentapps.providers.bedrock.

The model gets one tool, `invoke` ({code: string}). Text deltas are reported to the hook as they
arrive (`message` with `delta: true`); a retried turn is announced with `retry` so its text can
be discarded. A turn's tool calls run only after its stream completed, so retrying a model call
never repeats a tool's side effect. Ctrl-C (the context signal, or cancelling the task) stops
the stream within a fraction of a second.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentapps.errors import AgentAppsError
from agentapps.tools.schema import MAX_STRING

if TYPE_CHECKING:
    from agentapps.context.context import Context

INVOKE_TOOL = {
    "name": "invoke",
    "description": ("Run JavaScript (the body of an async function) in the sandbox. Call skills "
                    "with `await ctx.manager.invoke(name, args)`, end with "
                    "`ctx.manager.finish(value)`; `memory` persists between calls."),
    "inputSchema": {"type": "object", "required": ["code"],
                    "properties": {"code": {"type": "string", "description": "JavaScript code."}}},
}
Hook = Callable[[dict[str, Any]], Any]


def _client(ctx: Context, config: dict[str, Any]) -> Any:
    from agentapps.providers.bedrock import make_client

    region = config.get("region") if isinstance(config.get("region"), str) else None
    endpoint = config.get("endpointUrl") if isinstance(config.get("endpointUrl"), str) else None
    cache = ctx.globals.cache_for("bedrock.clients")
    key = (region, endpoint)
    if key not in cache:
        cache[key] = make_client(region, endpoint_url=endpoint)
    return cache[key]


async def _stream(ctx: Context, hook: Hook, call: Callable[..., Any]) -> Any:
    """Run one blocking `stream_turn` in a thread, forwarding its callbacks to the async hook."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    stop = threading.Event()
    signal = ctx.globals.signal

    def on_text(text: str) -> None:
        loop.call_soon_threadsafe(events.put_nowait, {"type": "message", "text": text, "delta": True})

    def on_retry(attempt: int, delay: float, message: str) -> None:
        loop.call_soon_threadsafe(events.put_nowait, {
            "type": "retry", "attempt": attempt, "delay": round(delay, 3), "error": message})

    done = asyncio.ensure_future(asyncio.to_thread(
        call, on_text=on_text, on_retry=on_retry, cancelled=lambda: stop.is_set() or signal.aborted))
    done.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "never retrieved"
    try:
        while True:
            getter = asyncio.ensure_future(events.get())
            await asyncio.wait({done, getter}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
                while not events.empty():
                    await hook(events.get_nowait())
                return done.result()
            await hook(getter.result())
    finally:
        stop.set()  # a cancelled run stops the stream thread within ~50 ms


async def run_bedrock(ctx: Context, args: dict[str, Any]) -> Any:
    """The provider contract over Converse: turns, tool calls through invokeRef, hooks."""
    from agentapps.providers.bedrock import stream_turn
    from agentapps.providers.bedrock_errors import is_retryable

    config = args.get("config") or {}
    invoke_ref, hook_ref = args["invokeRef"], args["hookRef"]

    async def hook(event: dict[str, Any]) -> dict[str, Any]:
        answer = await ctx.manager.invoke(hook_ref, event)
        return answer if isinstance(answer, dict) else {}

    client = await asyncio.to_thread(_client, ctx, config)
    inference = {"maxTokens": config.get("maxTokens", 4096), "temperature": config.get("temperature")}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": args.get("userMessage") or "Carry out the task."}]}]
    turn, attempt = 0, 0
    while True:
        if attempt == 0:
            turn += 1
            await hook({"type": "turn-start", "turnNumber": turn})

        def call(**callbacks: Any) -> Any:
            return stream_turn(client, model_id=str(config["id"]), system=str(args.get("prompt") or ""),
                               messages=messages, tools=[INVOKE_TOOL], inference=inference, **callbacks)

        try:
            result = await _stream(ctx, hook, call)
        except AgentAppsError as exc:
            if exc.exit_code >= 128:
                raise
            attempt += 1
            cause = exc.__cause__
            directive = await hook({"type": "error", "error": exc.message, "attempt": attempt,
                                    "retryable": cause is not None and is_retryable(cause)})
            if not directive.get("retry"):
                raise
            await asyncio.sleep(float(directive.get("delay") or 0))
            continue
        attempt = 0
        content = result.content or [{"text": "(no reply)"}]
        messages.append({"role": "assistant", "content": content})
        text = "".join(block.get("text", "") for block in content)
        uses = [block["toolUse"] for block in content if "toolUse" in block]
        results = [await _run_tool(ctx, hook, invoke_ref, use) for use in uses]
        # the agent already has the text from the deltas; a very long answer would not pass the
        # size limit on skill args, so it is only repeated here when it fits
        said = {"result": text} if len(text) < MAX_STRING else {}
        directive = await hook({"type": "turn-end", "turnNumber": turn, **said,
                                "usage": result.usage, "stopReason": result.stop_reason,
                                "toolCalls": len(uses)})
        if directive.get("stop"):
            return directive.get("result", text)
        follow = [{"text": directive["message"]}] if directive.get("message") else []
        if uses or directive.get("continue"):
            messages.append({"role": "user", "content": results + follow or [{"text": "Continue."}]})
            continue
        return text


async def _run_tool(ctx: Context, hook: Hook, invoke_ref: str, use: dict[str, Any]) -> dict[str, Any]:
    """One toolUse block: ask the hook, run it through invokeRef, answer as a toolResult."""
    call = {"type": "tool-call", "tool": use.get("name"), "args": use.get("input") or {},
            "toolUseId": use.get("toolUseId")}
    directive = await hook(call)
    if directive.get("deny"):
        status, text = "error", f"Denied: {directive['deny']}"
    else:
        result = await ctx.manager.invoke(invoke_ref, {"code": (use.get("input") or {}).get("code")})
        await hook({**call, "type": "tool-result", "result": result})
        status, text = str(result.get("status", "success")), str(result.get("text", ""))
    return {"toolResult": {"toolUseId": use.get("toolUseId"), "content": [{"text": text}],
                           "status": "error" if status == "error" else "success"}}
