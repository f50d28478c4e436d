"""The streaming provider loop shared by `agent-bedrock` (Bedrock Converse, through
agentapps.providers.bedrock) and `agent-openai` (Chat Completions, through
agentapps.providers.openai_chat); a `Backend` is what differs between them.

The model gets one tool, `invoke` ({code: string}). Text deltas are reported to the hook as they
arrive (`message` with `delta: true`); a retried turn is announced with `retry` so its text can
be discarded. A turn's tool calls run only after its stream completed, so retrying a model call
never repeats a tool's side effect. Ctrl-C (the context signal, or cancelling the task) stops
the stream within a fraction of a second.

Long runs: the conversation is a `View` in Converse's shape (each backend translates it for its
API) that `context_edit.fit` may edit before each call (`model.contextEdit`), and whose estimated
size goes out with `turn-start` (`contextTokens`); on Bedrock the system prompt and tool docs end
with a cache point (`model.cache`); when the model keeps throttling or is not available, the next
of `model.fallback` takes over (a `fallback` event).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentapps.agent.bedrock_config import attempts as max_attempts
from agentapps.agent.bedrock_config import inference as inference_of
from agentapps.agent.bedrock_config import model_ids
from agentapps.agent.checkpoint import resumable_for
from agentapps.agent.context_edit import SUMMARY_SYSTEM, fit, settings
from agentapps.agent.context_view import View
from agentapps.agent.models import cache_mode
from agentapps.errors import AgentAppsError, LimitError
from agentapps.schemas.validation import MAX_STRING

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


@dataclass(frozen=True)
class Backend:
    """What one streaming provider plugs into the loop.

    `client(ctx, config, skill, attempts)` makes (or reuses) the SDK client, blocking; `turn(client,
    config, skill, **kw)` runs one streamed model turn with the keyword arguments of
    `providers.bedrock.stream_turn` and returns its TurnResult; `fallback_reason(exc)` and
    `is_retryable(exc)` judge the SDK failure behind a provider error."""

    client: Callable[[Context, Mapping[str, Any], str, int], Any]
    turn: Callable[..., Any]
    fallback_reason: Callable[[BaseException], str | None]
    is_retryable: Callable[[BaseException], bool]
    temperature_top: float = 1


def _bedrock_client(ctx: Context, config: Mapping[str, Any], skill: str, attempts: int) -> Any:
    from agentapps.providers.bedrock import make_client

    region = config.get("region") if isinstance(config.get("region"), str) else None
    endpoint = config.get("endpointUrl") if isinstance(config.get("endpointUrl"), str) else None
    # AWS credentials sign requests only to an endpoint the project chose (the main skill's
    # model.endpointUrl, AWS_ENDPOINT_URL_BEDROCK_RUNTIME, or the default): a skill's own endpoint is
    # reached unsigned, so it never sees the access key id or the session token
    signed = endpoint is None or any(same_endpoint(endpoint, chosen) for chosen in _project_endpoints(ctx))
    cache = ctx.globals.cache_for("bedrock.clients")
    key = (region, endpoint, attempts, signed)
    if key not in cache:
        cache[key] = make_client(region, endpoint_url=endpoint, max_attempts=attempts, signed=signed)
    return cache[key]


def _project_endpoints(ctx: Context) -> tuple[str, ...]:
    main = ctx.globals.config.main_tool
    model = main.metadata.get("model") if main is not None else None
    chosen = model.get("endpointUrl") if isinstance(model, Mapping) else None
    from_env = os.environ.get("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or os.environ.get("AWS_ENDPOINT_URL")
    return tuple(u for u in (chosen, from_env) if isinstance(u, str) and u)


def same_endpoint(one: str, other: str) -> bool:
    """Whether two endpoint URLs name the same server and path: scheme and host in any case, a
    default port written or not, a trailing slash or not (a host's trailing dot is kept: `name.`
    and `name` may resolve apart). A URL with user info, a query or a
    fragment, or one that does not parse, matches only itself as written."""
    return one == other or (_endpoint_key(one) or one) == (_endpoint_key(other) or other)


def _endpoint_key(url: str) -> tuple[str, str, int, str] | None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or parts.query or parts.fragment:
        return None
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80), parts.path.rstrip("/")


def _bedrock_turn(client: Any, config: Mapping[str, Any], skill: str, *, model_id: str,
                  cache: bool = True, **kw: Any) -> Any:  # fmt: skip
    from agentapps.providers.bedrock import stream_turn

    mode = cache_mode(config.get("cache"), model_id, skill) if cache else None
    return stream_turn(client, model_id=model_id, cache=mode, **kw)


def _bedrock_fallback(exc: BaseException) -> str | None:
    from agentapps.providers.bedrock_errors import fallback_reason

    return fallback_reason(exc)


def _bedrock_retryable(exc: BaseException) -> bool:
    from agentapps.providers.bedrock_errors import is_retryable

    return is_retryable(exc)


BEDROCK = Backend(_bedrock_client, _bedrock_turn, _bedrock_fallback, _bedrock_retryable)


async def _quiet(event: dict[str, Any]) -> Any:
    return None  # a summary call's text and retries are not the agent's turn


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
        stop.set()  # the stream thread sees it within providers.bedrock.POLL_SECONDS


async def run_bedrock(ctx: Context, args: dict[str, Any]) -> Any:
    """The provider contract over Converse: turns, tool calls through invokeRef, hooks."""
    return await run_streaming(ctx, args, BEDROCK)


async def run_streaming(ctx: Context, args: dict[str, Any], backend: Backend) -> Any:
    """The provider contract over a streaming backend: turns, tool calls through invokeRef, hooks."""
    config = args.get("config") or {}
    skill = str(args.get("skillName") or "agent")
    invoke_ref, hook_ref = args["invokeRef"], args["hookRef"]
    models, attempts = model_ids(config, skill), max_attempts(config, skill)
    inference = inference_of(config, skill, backend.temperature_top)
    output_cap = inference["maxTokens"]
    system = str(args.get("prompt") or "")

    async def hook(event: dict[str, Any]) -> dict[str, Any]:
        answer = await ctx.manager.invoke(hook_ref, event)
        return answer if isinstance(answer, dict) else {}

    client = await asyncio.to_thread(backend.client, ctx, config, skill, attempts)
    view = View([{"role": "user", "content": [{"text": args.get("userMessage") or "Carry out the task."}]}],
                len(system) + len(json.dumps(INVOKE_TOOL)))
    current = 0
    turn, attempt, fresh = 0, 0, True
    resumable = resumable_for(ctx, hook_ref)  # `agentapps run`'s own agent: checkpoints after each turn
    if resumable is not None and resumable.seed is not None:  # a resume: from the checkpoint's turn
        view.messages, turn = list(resumable.seed["messages"]), int(resumable.seed["turn"])
        saved = resumable.seed["provider"].get("model")
        if saved in models:  # a fallback had taken over: the resumed run goes on with that model
            current = models.index(saved)

    async def summarize(prompt: str) -> tuple[str, dict[str, int], str | None]:
        model = models[current]

        def call(**callbacks: Any) -> Any:
            return backend.turn(client, config, skill, model_id=model, system=SUMMARY_SYSTEM, tools=[],
                                messages=[{"role": "user", "content": [{"text": prompt}]}],
                                inference={"maxTokens": min(2048, int(output_cap))}, cache=False,
                                max_stream_retries=attempts - 1, **callbacks)

        done = await _stream(ctx, _quiet, call)
        return "".join(b.get("text", "") for b in done.content), done.usage, model

    while True:
        model = models[current]
        if fresh:
            turn += 1
            await fit(view, settings(config, model, skill), hook, summarize)
            await hook({"type": "turn-start", "turnNumber": turn, "contextTokens": view.sending(),
                        "model": model})
        fresh = False

        def call(model: str = model, **callbacks: Any) -> Any:
            return backend.turn(client, config, skill, model_id=model, system=system,
                                messages=view.messages, tools=[INVOKE_TOOL], inference=inference,
                                max_stream_retries=attempts - 1, **callbacks)

        try:
            result = await _stream(ctx, hook, call)
        except AgentAppsError as exc:
            if exc.exit_code >= 128:
                raise
            cause = exc.__cause__
            why = backend.fallback_reason(cause) if cause is not None else None
            if why and current + 1 < len(models):
                current += 1
                await hook({"type": "fallback", "from": model, "to": models[current], "reason": why,
                            "error": exc.message})
                continue
            attempt += 1
            directive = await hook({"type": "error", "error": exc.message, "attempt": attempt,
                                    "retryable": cause is not None and backend.is_retryable(cause),
                                    **({"reason": "context_window"} if isinstance(exc, LimitError) else {})})
            if not directive.get("retry"):
                raise
            await asyncio.sleep(float(directive.get("delay") or 0))
            continue
        attempt, fresh = 0, True
        view.calibrate(result.usage)
        content = result.content or [{"text": "(no reply)"}]
        view.messages.append({"role": "assistant", "content": content})
        text = "".join(block.get("text", "") for block in content)
        uses = [block["toolUse"] for block in content if "toolUse" in block]
        results = [await _run_tool(ctx, hook, invoke_ref, use) for use in uses]
        # the agent already has the text from the deltas; a very long answer would not pass the
        # size limit on skill args, so it is only repeated here when it fits
        said = {"result": text} if len(text) < MAX_STRING else {}
        directive = await hook({"type": "turn-end", "turnNumber": turn, **said,
                                "usage": result.usage, "stopReason": result.stop_reason,
                                "toolCalls": len(uses), "model": model})
        if directive.get("stop"):
            return directive.get("result", text)
        follow = [{"text": directive["message"]}] if directive.get("message") else []
        if uses or directive.get("continue"):
            view.messages.append({"role": "user", "content": results + follow or [{"text": "Continue."}]})
            if resumable is not None:
                resumable.save(turn, view.messages, {"model": models[current]})
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
