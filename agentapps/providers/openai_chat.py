"""OpenAI Chat Completions client wrapper: the only module that calls the `openai` SDK (imported
lazily), for OpenAI and any compatible server (Azure OpenAI's v1 API, OpenRouter, vLLM, Ollama,
LM Studio, llama.cpp's server).

The agent loop keeps its conversation in Converse's shape (`agentapps.agent.converse`), so context
editing and the trace are the same for every provider; this module translates it to chat messages
for each request and folds the streamed chunks back into a `TurnResult` with the four usage
counters (`prompt_tokens` less the cached ones is `inputTokens`; OpenAI caches long prompt
prefixes by itself, and the cached part is `cacheReadInputTokens`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from agentapps.errors import ConfigError, ProviderError, UsageError
from agentapps.providers.bedrock import TurnResult
from agentapps.providers.bedrock_errors import (
    IncompleteStreamError,
)
from agentapps.providers.endpoint import NOTHING_TRUSTED, Endpoint, Trusted
from agentapps.providers.openai_errors import vendor
from agentapps.providers.stream_thread import OnRetry, read_stream, retried

__all__ = ["OPENAI_URL", "build_request", "endpoint_of", "make_client", "stream_turn"]

OPENAI_URL = "https://api.openai.com/v1"
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                "length": "max_tokens", "content_filter": "content_filtered"}


def endpoint_of(config: dict[str, Any], skill: str, trusted: Trusted = NOTHING_TRUSTED) -> Endpoint:
    """`model.baseUrl`, else OPENAI_BASE_URL, else OpenAI; the key from `model.apiKeyEnv`
    (default OPENAI_API_KEY), sent only to a URL the project chose (`trusted`, see Endpoint); another variable than the vendor's only when the project named it."""
    return Endpoint.from_config(config, skill, default_url=OPENAI_URL, url_env="OPENAI_BASE_URL",
                                key_env="OPENAI_API_KEY", trusted=trusted)


def make_client(endpoint: Endpoint, *, read_timeout: float = 600) -> Any:
    """An `openai.OpenAI` client for `endpoint`. The SDK's own retries are off: `stream_turn`
    retries every call itself, so each retry is announced and cancellable."""
    try:
        import openai
    except ImportError:
        raise UsageError("The openai provider needs the OpenAI SDK: pip install 'agentapps[openai]'.") from None
    if endpoint.withheld == "key_env":  # the vendor's own URL, a variable the project did not name
        raise ConfigError(f"No OpenAI API key sent.{endpoint.unsent_key('OPENAI_BASE_URL')}", setting=("model", "apiKeyEnv"))
    if endpoint.key is None and endpoint.official:
        raise ConfigError(f"No OpenAI API key: set {endpoint.key_env} (`export {endpoint.key_env}=sk-...`), or "
                          "point model.baseUrl / OPENAI_BASE_URL at a server that needs none.",
                          setting=("model", "apiKeyEnv"))
    # a local server without keys: a key function that gives "", and each request omits the header
    key: Any = endpoint.key if endpoint.key is not None else (lambda: "")
    return openai.OpenAI(api_key=key, base_url=endpoint.base_url, max_retries=0, timeout=read_timeout,
                         default_headers={"User-Agent": "agentapps"})


def _tool(spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec["name"], "description": spec.get("description", ""),
                                             "parameters": spec.get("inputSchema", {"type": "object"})}}


def chat_messages(system: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Converse-shaped messages as chat messages: tool uses become `tool_calls`, tool results
    `tool` messages (right after the assistant message that asked), text the message content."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        blocks = message.get("content") or []
        text = "".join(b["text"] for b in blocks if isinstance(b.get("text"), str))
        if message.get("role") == "assistant":
            calls = [{"id": use["toolUseId"], "type": "function",
                      "function": {"name": use["name"], "arguments": json.dumps(use.get("input") or {})}}
                     for use in (b["toolUse"] for b in blocks if "toolUse" in b)]
            reply: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                reply["tool_calls"] = calls
            out.append(reply)
            continue
        for block in blocks:
            if "toolResult" in block:
                result = block["toolResult"]
                said = "".join(c.get("text", "") for c in result.get("content") or [])
                out.append({"role": "tool", "tool_call_id": result["toolUseId"], "content": said})
        if text:
            out.append({"role": "user", "content": text})
    return out


# hosts that serve OpenAI's own models, whose newer ones refuse `max_tokens`
COMPLETION_TOKENS_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", "openrouter.ai")


def output_cap_name(endpoint: Endpoint) -> str:
    """`max_completion_tokens` for OpenAI, Azure OpenAI and OpenRouter; `max_tokens`, the only name
    many local servers know, for the others."""
    host = urlsplit(endpoint.base_url).hostname or ""
    if endpoint.official or host.endswith(COMPLETION_TOKENS_HOSTS):
        return "max_completion_tokens"
    return "max_tokens"


def build_request(*, endpoint: Endpoint, model_id: str, system: str, messages: list[dict[str, Any]],
                  tools: list[dict[str, Any]], inference: dict[str, Any]) -> dict[str, Any]:
    """`chat.completions.create` keyword arguments for one streamed turn."""
    request: dict[str, Any] = {"model": model_id, "messages": chat_messages(system, messages), "stream": True,
                               "stream_options": {"include_usage": True}}
    if tools:
        request["tools"] = [_tool(spec) for spec in tools]
    if inference.get("maxTokens") is not None:
        request[output_cap_name(endpoint)] = inference["maxTokens"]
    if inference.get("temperature") is not None:
        request["temperature"] = inference["temperature"]
    return request


class _TurnAssembler:
    """Folds chat completion chunks into a TurnResult, calling on_text per text delta."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, int] = {}

    def feed(self, chunk: Any) -> None:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
            details = getattr(usage, "prompt_tokens_details", None)
            cached = min(int(getattr(details, "cached_tokens", 0) or 0), prompt)
            self.usage = {"inputTokens": prompt - cached,
                          "outputTokens": int(getattr(usage, "completion_tokens", 0) or 0),
                          "cacheReadInputTokens": cached, "cacheWriteInputTokens": 0}
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0):
                continue  # only the first choice is asked for
            delta = getattr(choice, "delta", None)
            content = getattr(delta, "content", None)
            if isinstance(content, str) and content:
                self.text.append(content)
                if self.on_text is not None:
                    self.on_text(content)
            for n, call in enumerate(getattr(delta, "tool_calls", None) or []):
                index = getattr(call, "index", None)
                slot = self.calls.setdefault(n if index is None else int(index),
                                             {"id": None, "name": "", "arguments": []})
                slot["id"] = getattr(call, "id", None) or slot["id"]
                function = getattr(call, "function", None)
                slot["name"] += getattr(function, "name", None) or ""
                slot["arguments"].append(getattr(function, "arguments", None) or "")
            if getattr(choice, "finish_reason", None):
                self.finish = str(choice.finish_reason)

    def result(self, model_id: str) -> TurnResult:
        if self.finish is None:
            raise IncompleteStreamError("the stream ended before a finish_reason")
        content: list[dict[str, Any]] = [{"text": "".join(self.text)}] if self.text else []
        for n in sorted(self.calls):
            call = self.calls[n]
            raw = "".join(call["arguments"])
            try:
                value = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError:
                value = None
            if not isinstance(value, dict):
                hint = "; the answer hit maxOutputTokens, raise it" if self.finish == "length" else ""
                raise ProviderError(f"Model '{model_id}' sent arguments for tool '{call['name']}' that are not "
                                    f"a JSON object{hint}.")
            content.append({"toolUse": {"toolUseId": call["id"] or f"call_{n}", "name": call["name"],
                                        "input": value}})
        stop = "tool_use" if self.calls else STOP_REASONS.get(self.finish, self.finish)
        return TurnResult(content=content, stop_reason=stop, usage=dict(self.usage))


def stream_turn(
    client: Any,
    *,
    endpoint: Endpoint,
    model_id: str,
    system: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    inference: dict[str, Any],
    on_text: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_retry: OnRetry | None = None,
    max_stream_retries: int = 4,
    backoff_base: float = 0.5,
    backoff_cap: float = 20.0,
    sleep: Callable[[float], None] = time.sleep,
) -> TurnResult:
    """Run one model turn over a streamed chat completion, retrying transient failures (rate
    limits, 5xx, a broken stream) with backoff, honouring Retry-After up to `backoff_cap`.

    Text already passed to `on_text` is sent again after a retry; `on_retry(attempt, delay,
    message)` tells the caller to discard what it showed. Tool calls are returned only once the
    stream is complete, so a retry never repeats a tool's side effect.
    """
    request = build_request(endpoint=endpoint, model_id=model_id, system=system, messages=messages,
                            tools=tools, inference=inference)
    if endpoint.key is None:
        import openai

        request["extra_headers"] = {"Authorization": openai.Omit()}  # no key: send no Authorization

    def attempt() -> TurnResult:
        assembler = _TurnAssembler(on_text)
        return read_stream(lambda: client.chat.completions.create(**request), assembler.feed,
                           partial(assembler.result, model_id), cancelled, service="OpenAI")

    return retried(attempt, vendor(endpoint, model_id), cancelled=cancelled, on_retry=on_retry,
                   max_stream_retries=max_stream_retries, backoff_base=backoff_base, backoff_cap=backoff_cap,
                   sleep=sleep)
