"""Anthropic Messages API client wrapper: the only module that calls the `anthropic` SDK (imported
lazily).

The agent loop keeps its conversation in Converse's shape (`agentapps.agent.converse`); this module
translates it to Messages content blocks for each request, marks the prompt cache with
`cache_control` (after the system prompt, which covers the tool definitions before it; with
`model.cache: "conversation"` also after the latest message), and folds the streamed events back
into a `TurnResult` with the four usage counters (`input_tokens`, `output_tokens`,
`cache_read_input_tokens`, `cache_creation_input_tokens`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from agentapps.errors import ConfigError, ProviderError, UsageError
from agentapps.providers.anthropic_errors import describe, explain_error, is_retryable
from agentapps.providers.bedrock import TurnResult
from agentapps.providers.bedrock_errors import (
    IncompleteStreamError,
)
from agentapps.providers.endpoint import NOTHING_TRUSTED, Endpoint, Trusted
from agentapps.providers.http_errors import retry_after
from agentapps.providers.stream_thread import OnRetry, Vendor, read_stream, retried

__all__ = ["ANTHROPIC_URL", "build_request", "endpoint_of", "make_client", "stream_turn"]

ANTHROPIC_URL = "https://api.anthropic.com"
EPHEMERAL = {"type": "ephemeral"}


def endpoint_of(config: dict[str, Any], skill: str, trusted: Trusted = NOTHING_TRUSTED) -> Endpoint:
    """`model.baseUrl`, else ANTHROPIC_BASE_URL, else Anthropic; the key from `model.apiKeyEnv`
    (default ANTHROPIC_API_KEY), sent only to a URL the project chose (`trusted`, see Endpoint); another variable than the vendor's only when the project named it."""
    return Endpoint.from_config(config, skill, default_url=ANTHROPIC_URL, url_env="ANTHROPIC_BASE_URL",
                                key_env="ANTHROPIC_API_KEY", trusted=trusted)


def make_client(endpoint: Endpoint, *, read_timeout: float = 600) -> Any:
    """An `anthropic.Anthropic` client for `endpoint`, with the SDK's own retries off: `stream_turn`
    retries every call itself, so each retry is announced and cancellable."""
    try:
        import anthropic
    except ImportError:
        raise UsageError("The anthropic provider needs the Anthropic SDK: pip install "
                         "'agentapps[anthropic]'.") from None
    if endpoint.withheld == "key_env":  # the vendor's own URL, a variable the project did not name
        raise ConfigError(f"No Anthropic API key sent.{endpoint.unsent_key('ANTHROPIC_BASE_URL')}", setting=("model", "apiKeyEnv"))
    if endpoint.key is None and endpoint.official:
        raise ConfigError(f"No Anthropic API key: set {endpoint.key_env} (`export {endpoint.key_env}=sk-ant-...`), "
                          "or point model.baseUrl / ANTHROPIC_BASE_URL at a gateway that needs none.",
                          setting=("model", "apiKeyEnv"))
    # no key (a gateway that needs none, or a key withheld from a skill's own URL): an explicit empty
    # key, so the SDK reads no credential of its own from the environment, and each request omits
    # the header (stream_turn)
    return anthropic.Anthropic(api_key=endpoint.key or "", base_url=endpoint.base_url, max_retries=0,
                               timeout=read_timeout, default_headers={"User-Agent": "agentapps"})


def _block(block: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]} if block["text"] else None
    if "toolUse" in block:
        use = block["toolUse"]
        return {"type": "tool_use", "id": use["toolUseId"], "name": use["name"], "input": use.get("input") or {}}
    if "toolResult" in block:
        result = block["toolResult"]
        said = "".join(c.get("text", "") for c in result.get("content") or [])
        return {"type": "tool_result", "tool_use_id": result["toolUseId"],
                "content": [{"type": "text", "text": said or "(empty)"}],
                "is_error": result.get("status") == "error"}
    return None  # a Bedrock cache point or anything else this API has no block for


def api_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Converse-shaped messages as Messages API messages (tool results first, as it requires)."""
    out = []
    for message in messages:
        blocks = [b for b in (_block(raw) for raw in message.get("content") or []) if b is not None]
        out.append({"role": message.get("role", "user"), "content": blocks or [{"type": "text", "text": "..."}]})
    return out


def build_request(*, model_id: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                  inference: dict[str, Any], cache: str | None = None) -> dict[str, Any]:
    """`messages.create` keyword arguments for one streamed turn."""
    sent = api_messages(messages)
    if cache == "conversation" and sent:
        last = sent[-1]
        sent[-1] = {**last, "content": [*last["content"][:-1], {**last["content"][-1], "cache_control": EPHEMERAL}]}
    request: dict[str, Any] = {"model": model_id, "messages": sent, "stream": True,
                               "max_tokens": int(inference.get("maxTokens") or 4096)}
    if system:
        request["system"] = [{"type": "text", "text": system, **({"cache_control": EPHEMERAL} if cache else {})}]
    if tools:
        request["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                             "input_schema": t.get("inputSchema", {"type": "object"})} for t in tools]
    if inference.get("temperature") is not None:
        request["temperature"] = inference["temperature"]
    return request


class _TurnAssembler:
    """Folds Messages stream events into a TurnResult, calling on_text per text delta."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.blocks: dict[int, dict[str, Any]] = {}
        self.fragments: dict[int, list[str]] = {}
        self.stop_reason: str | None = None
        self.stopped = False
        self.usage = {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0, "cacheWriteInputTokens": 0}

    def _count(self, usage: Any) -> None:
        for key, field in (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens"),
                           ("cacheReadInputTokens", "cache_read_input_tokens"),
                           ("cacheWriteInputTokens", "cache_creation_input_tokens")):
            value = getattr(usage, field, None)
            if isinstance(value, int):
                self.usage[key] = value  # message_delta repeats the counts, cumulative

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._count(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            block, index = event.content_block, int(event.index)
            if getattr(block, "type", None) == "tool_use":
                self.blocks[index] = {"toolUse": {"toolUseId": block.id, "name": block.name, "input": {}}}
                self.fragments[index] = []
            elif getattr(block, "type", None) == "text":
                self.blocks[index] = {"text": getattr(block, "text", "") or ""}
        elif kind == "content_block_delta":
            delta, index = event.delta, int(event.index)
            if getattr(delta, "type", None) == "text_delta":
                self.blocks.setdefault(index, {"text": ""})["text"] += delta.text
                if self.on_text is not None:
                    self.on_text(delta.text)
            elif getattr(delta, "type", None) == "input_json_delta":
                self.fragments.setdefault(index, []).append(delta.partial_json or "")
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
            self._count(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.stopped = True

    def result(self, model_id: str) -> TurnResult:
        if not self.stopped:
            raise IncompleteStreamError("the stream ended before message_stop")
        for index, parts in self.fragments.items():
            raw = "".join(parts)
            try:
                value = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError:
                value = None
            if not isinstance(value, dict):
                name = self.blocks[index]["toolUse"]["name"]
                hint = "; the answer hit maxOutputTokens, raise it" if self.stop_reason == "max_tokens" else ""
                raise ProviderError(f"Model '{model_id}' sent input for tool '{name}' that is not a JSON object{hint}.")
            self.blocks[index]["toolUse"]["input"] = value
        content = [self.blocks[i] for i in sorted(self.blocks) if self.blocks[i] != {"text": ""}]
        return TurnResult(content=content, stop_reason=self.stop_reason or "end_turn", usage=dict(self.usage))


def stream_turn(
    client: Any,
    *,
    endpoint: Endpoint,
    model_id: str,
    system: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    inference: dict[str, Any],
    cache: str | None = None,
    on_text: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_retry: OnRetry | None = None,
    max_stream_retries: int = 4,
    backoff_base: float = 0.5,
    backoff_cap: float = 20.0,
    sleep: Callable[[float], None] = time.sleep,
) -> TurnResult:
    """Run one model turn over a streamed Messages call, retrying transient failures (rate limits,
    overload, 5xx, a broken stream) with backoff, honouring Retry-After up to `backoff_cap`.
    Tool calls are returned only once the stream is complete, so a retry never repeats a tool's
    side effect; `on_retry` tells the caller to discard text it already showed."""
    request = build_request(model_id=model_id, system=system, messages=messages, tools=tools,
                            inference=inference, cache=cache)
    if endpoint.key is None:
        import anthropic

        request["extra_headers"] = {"Authorization": anthropic.Omit(), "X-Api-Key": anthropic.Omit()}

    def attempt() -> TurnResult:
        assembler = _TurnAssembler(on_text)
        return read_stream(lambda: client.messages.create(**request), assembler.feed,
                           partial(assembler.result, model_id), cancelled, service="Anthropic")

    vendor = Vendor("Anthropic", is_retryable, retry_after,
                    lambda exc, tries: explain_error(exc, model_id=model_id, base_url=endpoint.base_url,
                                                     key_env=endpoint.key_env, retries=tries,
                                                     unsent=endpoint.unsent_key("ANTHROPIC_BASE_URL")),
                    lambda exc: describe(exc, endpoint.key_env))
    return retried(attempt, vendor, cancelled=cancelled, on_retry=on_retry,
                   max_stream_retries=max_stream_retries, backoff_base=backoff_base, backoff_cap=backoff_cap,
                   sleep=sleep)
