"""The model's view of a conversation (Converse-shaped messages) and how many tokens it holds.

Providers keep the messages they send in a `View`. Token counts come from the provider's usage
reports; before a call the size must be estimated, and this is how: `tokens per character` is
calibrated on every report (the whole input the model read, divided by the characters of the
request that produced it: system prompt, tool definitions and messages), and the estimate is
that ratio times the characters of the view now. Before the first report the ratio is 1/4 (about
four characters per token, typical for English text and code).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from agentapps.agent import usage as u

DEFAULT_RATIO = 0.25


def block_chars(block: Mapping[str, Any]) -> int:
    """Characters of one content block as the model reads it."""
    if "text" in block:
        return len(str(block["text"]))
    if "toolUse" in block:
        use = block["toolUse"]
        return len(str(use.get("name", ""))) + len(json.dumps(use.get("input", {}), ensure_ascii=False))
    if "toolResult" in block:
        return sum(block_chars(item) if "text" in item else len(json.dumps(item, ensure_ascii=False))
                   for item in block["toolResult"].get("content", []))
    return len(json.dumps(block, ensure_ascii=False, default=str))


def message_chars(message: Mapping[str, Any]) -> int:
    return sum(block_chars(b) for b in message.get("content", ()) if isinstance(b, Mapping))


class View:
    """The messages a provider sends the model, plus the fixed part (system prompt, tools)."""

    def __init__(self, messages: list[dict[str, Any]], fixed_chars: int) -> None:
        self.messages = messages
        self.fixed_chars = fixed_chars
        self.ratio = DEFAULT_RATIO
        self.sent_chars = 0
        self.calibrated = False

    def chars(self) -> int:
        return self.fixed_chars + sum(message_chars(m) for m in self.messages)

    def estimate(self) -> int:
        """Estimated input tokens of a request made of this view now."""
        return math.ceil(self.chars() * self.ratio)

    def sending(self) -> int:
        """Note the size of the request about to go out; returns its estimated tokens."""
        self.sent_chars = self.chars()
        return math.ceil(self.sent_chars * self.ratio)

    def calibrate(self, report: Mapping[str, int]) -> None:
        """Learn tokens per character from the usage report of the request last sent."""
        seen = u.input_tokens(report)
        if seen > 0 and self.sent_chars > 0:
            self.ratio = seen / self.sent_chars
            self.calibrated = True
