"""Token accounting for the fake Bedrock, done the way the real service reports it.

- Tokens are counted from the request itself (`count`: words cut into pieces of at most four
  characters, and each punctuation mark), so they are not a fixed function of characters and an
  estimator has to calibrate.
- `inputTokens` is the input NOT read from or written to the prompt cache. Cache points
  (`{"cachePoint": ...}` blocks) in `toolConfig.tools`, `system` and message content mark
  prefixes (tools, then system, then messages); a prefix of at least `cache_min` tokens is
  written to the cache once (`cacheWriteInputTokens`) and read back by later requests to the same
  model that start with it (`cacheReadInputTokens`), found, as Claude's cache finds it, at any
  block boundary up to `LOOKBACK` blocks before a cache point. The tool definitions belong to
  the prefix.
- A request over `window` tokens is refused with `ValidationException: Input is too long for
  requested model.`, and consumes no reply of the script.
- A request without tools (a context-editing summary call) gets `summary` as its answer and
  consumes no reply either.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(r"\w{1,4}|[^\w\s]")
PER_MESSAGE = 3  # role and turn markers the service adds around each message
LOOKBACK = 20  # blocks before a cache point where an earlier cached prefix is still found


@functools.lru_cache(maxsize=4096)  # a long conversation sends the same blocks again each turn
def count(text: str) -> int:
    return len(_TOKEN.findall(text))


def _block_text(block: dict[str, Any]) -> str:
    if "text" in block:
        return str(block["text"])
    if "toolUse" in block:
        use = block["toolUse"]
        return f"{use.get('name', '')} {json.dumps(use.get('input', {}))}"
    if "toolResult" in block:
        return " ".join(str(item.get("text", json.dumps(item)))
                        for item in block["toolResult"].get("content", []))
    return json.dumps(block)


@dataclass
class Meter:
    window: int | None = None
    cache_min: int = 1024
    summary: str = "Summary: the earlier turns read files and noted their sizes."
    cached: set[tuple[str, str]] = field(default_factory=set)
    summaries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def segments(self, body: dict[str, Any]) -> list[tuple[str, int] | None]:
        """The request as (text, tokens) pieces in prefix order; None marks a cache point."""
        out: list[tuple[str, int] | None] = []
        for tool in (body.get("toolConfig") or {}).get("tools", []):
            if "cachePoint" in tool:
                out.append(None)
            else:
                text = json.dumps(tool, sort_keys=True)
                out.append((text, count(text)))
        for block in body.get("system", []):
            out.append(None if "cachePoint" in block else (block.get("text", ""), count(block.get("text", ""))))
        for message in body.get("messages", []):
            out.append((message.get("role", ""), PER_MESSAGE))
            for block in message.get("content", []):
                if "cachePoint" in block:
                    out.append(None)
                else:
                    text = _block_text(block)
                    out.append((text, count(text)))
        return out

    def tokens(self, body: dict[str, Any]) -> int:
        return sum(s[1] for s in self.segments(body) if s is not None)

    def too_long(self, body: dict[str, Any]) -> bool:
        return self.window is not None and self.tokens(body) > self.window

    def usage(self, model_id: str, body: dict[str, Any], reply_blocks: list[dict[str, Any]]) -> dict[str, int]:
        """The usage report for this request: input split by the cache, and the reply's output."""
        total, digest = 0, hashlib.sha256()
        bounds: list[tuple[int, str]] = []  # (tokens, prefix hash) after each block
        points: list[int] = []  # indexes into bounds of the cache points
        for segment in self.segments(body):
            if segment is None:
                if bounds:
                    points.append(len(bounds) - 1)
                continue
            digest.update(segment[0].encode() + b"\0")
            total += segment[1]
            bounds.append((total, digest.copy().hexdigest()))
        usable = [i for i in points if bounds[i][0] >= self.cache_min]
        with self._lock:
            read = max((bounds[j][0] for i in usable for j in range(max(i - LOOKBACK, 0), i + 1)
                        if (model_id, bounds[j][1]) in self.cached), default=0)
            last = bounds[usable[-1]][0] if usable else 0
            self.cached.update((model_id, bounds[i][1]) for i in usable)
        write = max(last - read, 0)
        output = sum(count(_block_text(b)) for b in reply_blocks)
        return {"inputTokens": total - read - write, "outputTokens": output,
                "cacheReadInputTokens": read, "cacheWriteInputTokens": write}
