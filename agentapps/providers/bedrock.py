"""Bedrock Converse client wrapper: the only module that talks to boto3 (imported lazily)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentapps.errors import ConfigError, ProviderError, RunInterruptedError
from agentapps.providers.bedrock_errors import (
    IncompleteStreamError,
    StreamFailed,
    aws_message,
    backoff_delay,
    explain_error,
    is_retryable,
    pause,
)

__all__ = ["TurnResult", "explain_error", "make_client", "stream_turn"]

POLL_SECONDS = 0.05  # how often a blocked stream re-checks cancelled()
USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
CACHE_POINT = {"cachePoint": {"type": "default"}}
OnRetry = Callable[[int, float, str], None]


@dataclass
class TurnResult:
    """One assistant turn: Converse content blocks, the stop reason and token usage."""

    content: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, int] = field(default_factory=dict)


def make_client(
    region: str | None,
    *,
    endpoint_url: str | None = None,
    max_attempts: int = 5,
    connect_timeout: float = 10,
    read_timeout: float = 600,
    signed: bool = True,
) -> Any:
    """A `bedrock-runtime` client from the standard AWS chain, standard retries, our timeouts.
    Unsigned (`signed=False`), its requests carry no credential at all: no SigV4 signature, no
    access key id, no session token."""
    import boto3  # type: ignore[import-untyped,unused-ignore]
    from botocore import UNSIGNED  # type: ignore[import-untyped,unused-ignore]
    from botocore.config import Config  # type: ignore[import-untyped,unused-ignore]
    from botocore.exceptions import BotoCoreError  # type: ignore[import-untyped,unused-ignore]

    try:
        session = boto3.session.Session()
        # botocore reads AWS_DEFAULT_REGION and profiles but not AWS_REGION, which other SDKs prefer
        resolved = region or os.environ.get("AWS_REGION") or session.region_name
        if not resolved:
            raise ConfigError(
                "No AWS region for Bedrock: set AWS_REGION (e.g. `export AWS_REGION=us-east-1`), "
                "add `region = us-east-1` to your AWS profile, or set the model's region.",
                setting=("model", "region"),
            )
        config = Config(
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            user_agent_extra="agentapps",
            **({} if signed else {"signature_version": UNSIGNED}),
        )
        return session.client(
            "bedrock-runtime", region_name=resolved, endpoint_url=endpoint_url, config=config
        )
    except BotoCoreError as exc:  # unknown profile, malformed region, unreadable config file
        raise ConfigError(
            f"Cannot set up the Bedrock client: {aws_message(exc)}; check AWS_PROFILE, "
            "AWS_REGION and ~/.aws/config."
        ) from exc


def build_request(
    *, model_id: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
    inference: dict[str, Any], cache: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Converse keyword arguments; bare tool specs are wrapped as `{"toolSpec": ...}`.

    `cache`: "system" puts a cache point after the system prompt (it covers the tool definitions
    too, which come first); "conversation" also puts one after the last message, so the next
    turn reads the whole conversation so far from the cache.
    """
    request: dict[str, Any] = {"modelId": model_id, "messages": messages}
    if system:
        request["system"] = [{"text": system}, *([CACHE_POINT] if cache else [])]
    if cache == "conversation" and messages:
        last = messages[-1]
        request["messages"] = [*messages[:-1], {**last, "content": [*last["content"], CACHE_POINT]}]
    if tools:
        specs = [tool if "toolSpec" in tool else {"toolSpec": _spec(tool)} for tool in tools]
        request["toolConfig"] = {"tools": specs, "toolChoice": {"auto": {}}}
    config = {key: value for key, value in inference.items() if value is not None}
    if config:
        request["inferenceConfig"] = config
    return request


def _spec(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema", {"type": "object"})
    return {**tool, "inputSchema": schema if "json" in schema else {"json": schema}}


class _TurnAssembler:
    """Folds converse-stream events into a TurnResult, calling on_text per text delta."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.blocks: dict[int, dict[str, Any]] = {}
        self.fragments: dict[int, list[str]] = {}
        self.bad_tool: str | None = None
        self.stop_reason: str | None = None
        self.usage = dict.fromkeys(USAGE_KEYS, 0)

    def feed(self, event: dict[str, Any]) -> None:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start.get("start", {}).get("toolUse")
            if use is not None:
                index = start.get("contentBlockIndex", 0)
                self.blocks[index] = {"toolUse": {"toolUseId": use["toolUseId"],
                                                  "name": use["name"], "input": {}}}  # fmt: skip
                self.fragments[index] = []
        elif "contentBlockDelta" in event:
            body = event["contentBlockDelta"]
            index, delta = body.get("contentBlockIndex", 0), body.get("delta", {})
            if "text" in delta:
                block = self.blocks.setdefault(index, {"text": ""})
                block["text"] += delta["text"]
                if self.on_text is not None:
                    self.on_text(delta["text"])
            elif "toolUse" in delta:
                self.fragments.setdefault(index, []).append(delta["toolUse"].get("input", ""))
        elif "contentBlockStop" in event:
            self._finish_block(event["contentBlockStop"].get("contentBlockIndex", 0))
        elif "messageStop" in event:
            self.stop_reason = event["messageStop"].get("stopReason", "end_turn")
        elif "metadata" in event:
            usage = event["metadata"].get("usage", {})
            for key in self.usage:
                self.usage[key] = int(usage.get(key, 0))

    def _finish_block(self, index: int) -> None:
        block = self.blocks.get(index, {})
        if "toolUse" not in block:
            return
        raw = "".join(self.fragments.pop(index, []))
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            block["toolUse"]["input"] = value
        else:
            self.bad_tool = block["toolUse"]["name"]

    def result(self, model_id: str) -> TurnResult:
        if self.stop_reason is None:
            raise IncompleteStreamError("the stream ended before messageStop")
        if self.bad_tool is not None:
            hint = (
                "; the answer hit maxTokens, raise it" if self.stop_reason == "max_tokens" else ""
            )
            raise ProviderError(
                f"Model '{model_id}' sent input for tool '{self.bad_tool}' that is not a JSON "
                f"object{hint}."
            )
        content = [self.blocks[i] for i in sorted(self.blocks) if self.blocks[i] != {"text": ""}]
        return TurnResult(content=content, stop_reason=self.stop_reason, usage=dict(self.usage))


def _close_quietly(stream: Any) -> None:
    with contextlib.suppress(Exception):  # best effort: the connection may already be gone
        stream.close()


def _pump(client: Any, request: dict[str, Any], out: queue.Queue[tuple[str, Any]],
          stop: threading.Event) -> None:  # fmt: skip
    """Worker thread: a blocked socket read must not delay noticing cancellation."""
    stream: Any = None
    try:
        stream = client.converse_stream(**request)["stream"]
        out.put(("stream", stream))
        for event in stream:
            if stop.is_set():
                break
            out.put(("event", event))
        out.put(("end", None))
    except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
        out.put(("error", exc))
    finally:
        if stream is not None and stop.is_set():
            _close_quietly(stream)


def _attempt(
    client: Any, request: dict[str, Any], assembler: _TurnAssembler,
    cancelled: Callable[[], bool] | None,
) -> TurnResult:  # fmt: skip
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    worker = threading.Thread(
        target=_pump, args=(client, request, events, stop), name="bedrock-stream", daemon=True
    )
    worker.start()
    stream: Any = None
    try:
        while True:
            if cancelled is not None and cancelled():
                raise RunInterruptedError("Interrupted while streaming from Bedrock.")
            try:
                kind, value = events.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if kind == "stream":
                stream = value
            elif kind == "event":
                assembler.feed(value)
            elif kind == "error":
                raise StreamFailed(value)
            else:
                try:
                    return assembler.result(request["modelId"])
                except IncompleteStreamError as exc:
                    raise StreamFailed(exc) from None
    finally:
        stop.set()
        if stream is not None:
            _close_quietly(stream)


def stream_turn(
    client: Any,
    *,
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
    """Run one model turn over converse_stream, retrying transient failures, even mid-stream.

    Text already passed to `on_text` is sent again after a retry; `on_retry(attempt, delay,
    message)` tells the caller to discard what it showed.
    """
    request = build_request(model_id=model_id, system=system, messages=messages, tools=tools,
                            inference=inference, cache=cache)  # fmt: skip
    region = getattr(getattr(client, "meta", None), "region_name", None)
    attempt = 0
    while True:
        try:
            return _attempt(client, request, _TurnAssembler(on_text), cancelled)
        except StreamFailed as failed:
            # Retrying the whole turn is safe: tool calls are only returned once the stream is
            # complete, so no tool of this turn has run yet and no side effect can repeat.
            # (Failures before the stream starts were already retried by botocore's standard
            # mode; errors inside the stream never are, so this loop is the only retry for them.)
            exc = failed.error
            if not is_retryable(exc) or attempt >= max_stream_retries:
                raise explain_error(exc, model_id=model_id, region=region, retries=attempt) from exc
            delay = backoff_delay(attempt, backoff_base, backoff_cap)
            attempt += 1
            if on_retry is not None:
                on_retry(attempt, delay, aws_message(exc))
            pause(delay, sleep, cancelled)
