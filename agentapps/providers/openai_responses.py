"""OpenAI Responses API client calls (`model.api: responses` on agent-openai): the same turn as
`agentapps.providers.openai_chat` over `POST /responses`, for OpenAI and the servers that have it.

The conversation (Converse's shape) becomes input items: messages, `function_call` items for the
model's tool uses and `function_call_output` items for their results. Nothing is stored on the
server (`store: false`): every request carries the whole conversation, as with Chat Completions,
so context editing and replay work the same. Streamed events fold into a `TurnResult`; an `error`
or `response.failed` event is a failure of the call, retried when its code says it is transient.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from agentapps.errors import ProviderError
from agentapps.providers.bedrock import TurnResult
from agentapps.providers.bedrock_errors import (
    IncompleteStreamError,
    StreamFailed,
)
from agentapps.providers.endpoint import Endpoint
from agentapps.providers.openai_errors import vendor
from agentapps.providers.stream_thread import OnRetry, read_stream, retried

__all__ = ["ResponseStreamError", "build_request", "input_items", "stream_turn"]



class ResponseStreamError(Exception):
    """An `error` or `response.failed` event: the call failed after the stream began."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(message)
        self.body = {"error": {"code": code, "message": message}}


def input_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Converse-shaped messages as Responses input items, in conversation order."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role", "user")
        for block in message.get("content") or []:
            if isinstance(block.get("text"), str) and block["text"]:
                out.append({"role": role, "content": block["text"]})
            elif "toolUse" in block:
                use = block["toolUse"]
                out.append({"type": "function_call", "call_id": use["toolUseId"], "name": use["name"],
                            "arguments": json.dumps(use.get("input") or {})})
            elif "toolResult" in block:
                result = block["toolResult"]
                out.append({"type": "function_call_output", "call_id": result["toolUseId"],
                            "output": "".join(c.get("text", "") for c in result.get("content") or [])})
    return out


def build_request(*, model_id: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                  inference: dict[str, Any]) -> dict[str, Any]:
    """`responses.create` keyword arguments for one streamed turn."""
    request: dict[str, Any] = {"model": model_id, "input": input_items(messages), "stream": True, "store": False}
    if system:
        request["instructions"] = system
    if tools:
        request["tools"] = [{"type": "function", "name": t["name"], "description": t.get("description", ""),
                             "parameters": t.get("inputSchema", {"type": "object"}), "strict": False}
                            for t in tools]
    if inference.get("maxTokens") is not None:
        request["max_output_tokens"] = inference["maxTokens"]
    if inference.get("temperature") is not None:
        request["temperature"] = inference["temperature"]
    return request


class _TurnAssembler:
    """Folds Responses stream events into a TurnResult, calling on_text per text delta."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.status: str | None = None
        self.incomplete: str | None = None
        self.failure: ResponseStreamError | None = None
        self.usage: dict[str, int] = {}

    def _finish(self, response: Any) -> None:
        self.status = str(getattr(response, "status", None) or "completed")
        details = getattr(response, "incomplete_details", None)
        self.incomplete = getattr(details, "reason", None)
        usage = getattr(response, "usage", None)
        if usage is not None:
            total = int(getattr(usage, "input_tokens", 0) or 0)
            details = getattr(usage, "input_tokens_details", None)
            cached = int(getattr(details, "cached_tokens", 0) or 0)
            written = int(getattr(details, "cache_write_tokens", 0) or 0)
            self.usage = {"inputTokens": max(0, total - cached - written),
                          "outputTokens": int(getattr(usage, "output_tokens", 0) or 0),
                          "cacheReadInputTokens": cached, "cacheWriteInputTokens": written}

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "response.output_text.delta":
            self.text.append(event.delta)
            if self.on_text is not None:
                self.on_text(event.delta)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = event.item
            if getattr(item, "type", None) == "function_call":
                slot = self.calls.setdefault(int(event.output_index), {"arguments": []})
                slot.update(call_id=item.call_id, name=item.name)
                if kind == "response.output_item.done":
                    slot["arguments"] = [item.arguments or ""]  # the whole arguments, authoritative
        elif kind == "response.function_call_arguments.delta":
            self.calls.setdefault(int(event.output_index), {"arguments": []})["arguments"].append(event.delta)
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(event.response)
        elif kind == "response.failed":
            error = getattr(event.response, "error", None)
            self.failure = ResponseStreamError(getattr(error, "code", None),
                                               str(getattr(error, "message", None) or "the response failed"))
        elif kind == "error":
            self.failure = ResponseStreamError(getattr(event, "code", None), str(event.message))

    def result(self, model_id: str) -> TurnResult:
        if self.failure is not None:
            raise StreamFailed(self.failure)
        if self.status is None:
            raise IncompleteStreamError("the stream ended before response.completed")
        content: list[dict[str, Any]] = [{"text": "".join(self.text)}] if self.text else []
        for n in sorted(self.calls):
            call = self.calls[n]
            raw = "".join(call["arguments"])
            try:
                value = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError:
                value = None
            if not isinstance(value, dict):
                hint = "; the answer hit maxOutputTokens, raise it" if self.incomplete == "max_output_tokens" else ""
                raise ProviderError(f"Model '{model_id}' sent arguments for tool '{call.get('name')}' that are "
                                    f"not a JSON object{hint}.")
            content.append({"toolUse": {"toolUseId": call.get("call_id") or f"call_{n}", "name": call.get("name"),
                                        "input": value}})
        stop = "tool_use" if self.calls else ("max_tokens" if self.incomplete == "max_output_tokens"
                                              else "end_turn")
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
    """One model turn over a streamed response, retried as `openai_chat.stream_turn` retries."""
    request = build_request(model_id=model_id, system=system, messages=messages, tools=tools, inference=inference)
    if endpoint.key is None:
        import openai

        request["extra_headers"] = {"Authorization": openai.Omit()}  # no key: send no Authorization

    def attempt() -> TurnResult:
        assembler = _TurnAssembler(on_text)
        return read_stream(lambda: client.responses.create(**request), assembler.feed,
                           partial(assembler.result, model_id), cancelled, service="OpenAI")

    return retried(attempt, vendor(endpoint, model_id), cancelled=cancelled, on_retry=on_retry,
                   max_stream_retries=max_stream_retries, backoff_base=backoff_base, backoff_cap=backoff_cap,
                   sleep=sleep)
