"""openai-chat: an agent provider for any OpenAI-compatible chat completions API.

Ollama, vLLM, LM Studio, llama.cpp's server, OpenAI itself: anything that serves
`POST {baseUrl}/chat/completions` with tool calls. Select it in a skill's (or the main skill's)
metadata: `model: {agent: openai-chat, id: MODEL, baseUrl: URL}`. The OPENAI_BASE_URL environment
variable overrides `baseUrl`; the key is read from the variable named by `model.apiKeyEnv`
(default OPENAI_API_KEY) and sent only when it is set.

A provider only runs the model loop. The `agent` skill gives it the system prompt, the first user
message and two callback refs: `invokeRef` runs the model's code in the sandbox, `hookRef` reports
each event and answers with what to do next (stop, continue, remind, deny a call).
"""

import asyncio
import contextlib
import json
import os
import threading
import urllib.error
import urllib.request

from agentapps.errors import ProviderError

frontmatter = {
    "name": "openai-chat",
    "description": "Agent provider for an OpenAI-compatible chat completions API (Ollama, vLLM, LM Studio, OpenAI).",
    "metadata": {"visibility": "hidden", "tags": ["agent-provider"], "params": {"type": "object"}},
}

DEFAULT_BASE_URL = "http://localhost:11434/v1"  # Ollama
TOOL = {"type": "function", "function": {
    "name": "invoke",
    "description": ("Run JavaScript (the body of an async function) in the sandbox. Call skills with "
                    "`await ctx.manager.invoke(name, args)`, end with `ctx.manager.finish(value)`; "
                    "`memory` persists between calls."),
    "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
}}


def chat(config, messages):
    """One blocking chat completion request; failures become ProviderError with the remedy."""
    base = os.environ.get("OPENAI_BASE_URL") or config.get("baseUrl") or DEFAULT_BASE_URL
    url = base.rstrip("/") + "/chat/completions"
    body = {"model": config["id"], "messages": messages, "tools": [TOOL]}
    if config.get("temperature") is not None:
        body["temperature"] = config["temperature"]
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(config.get("apiKeyEnv") or "OPENAI_API_KEY")
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=float(config.get("requestTimeout", 600))) as reply:
            return json.load(reply)
    except urllib.error.HTTPError as exc:
        detail = exc.read(500).decode("utf-8", "replace").strip()
        raise ProviderError(f"{url} answered HTTP {exc.code}: {detail or exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ProviderError(f"Cannot reach {url}: {reason}. Is the server running? Set model.baseUrl "
                            "or OPENAI_BASE_URL.") from None


def in_thread(fn, *args):
    """Run a blocking call in a daemon thread, so Ctrl-C never waits for it."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(setter, value):
        if not future.done():
            setter(value)

    def work():
        try:
            outcome = (future.set_result, fn(*args))
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting task
            outcome = (future.set_exception, exc)
        with contextlib.suppress(RuntimeError):  # the loop is gone: the run was interrupted
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, daemon=True).start()
    return future


async def run(ctx, args):
    config, hook_ref, invoke_ref = args["config"], args["hookRef"], args["invokeRef"]

    async def hook(event):
        return await ctx.manager.invoke(hook_ref, event) or {}

    messages = [{"role": "system", "content": args["prompt"]},
                {"role": "user", "content": args.get("userMessage") or "Carry out the task."}]
    turn, attempt = 0, 0
    while True:
        if attempt == 0:
            turn += 1
            await hook({"type": "turn-start", "turnNumber": turn})
        try:
            reply = await in_thread(chat, config, messages)
        except ProviderError as exc:
            attempt += 1
            directive = await hook({"type": "error", "error": exc.message, "attempt": attempt})
            if not directive.get("retry"):
                raise
            await asyncio.sleep(float(directive.get("delay") or 0))
            continue
        attempt = 0
        message = reply["choices"][0]["message"]
        messages.append(message)
        text = message.get("content") or ""
        if text:
            await hook({"type": "message", "text": text})
        calls = message.get("tool_calls") or []
        for call in calls:
            call_args = json.loads(call["function"].get("arguments") or "{}")
            event = {"type": "tool-call", "tool": call["function"]["name"], "args": call_args}
            verdict = await hook(event)
            if verdict.get("deny"):
                result = {"status": "error", "text": "Denied: " + verdict["deny"]}
            else:
                result = await ctx.manager.invoke(invoke_ref, {"code": call_args.get("code")})
                await hook({**event, "type": "tool-result", "result": result})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result["text"]})
        usage = reply.get("usage") or {}
        directive = await hook({"type": "turn-end", "turnNumber": turn, "result": text,
                                "toolCalls": len(calls), "usage": {
                                    "inputTokens": usage.get("prompt_tokens", 0),
                                    "outputTokens": usage.get("completion_tokens", 0)}})
        if directive.get("stop"):
            return directive.get("result", text)
        if directive.get("message"):
            messages.append({"role": "user", "content": directive["message"]})
        elif not calls:
            if not directive.get("continue"):
                return text
            messages.append({"role": "user", "content": "Continue."})
