"""The model's view of a conversation (Converse-shaped messages) and how many tokens it holds.

Providers keep the messages they send in a `View`. Token counts come from the provider's usage
reports; before a call the size must be estimated, and this is how:

- what the last report covered counts as reported (the whole input the model read: plain,
  cache read and cache written), and only what was added since is estimated, at the tokens per
  character of the content added between the last two reports (new content is often denser or
  lighter than the system prompt);
- after the view was edited, or before the second report, the whole view is estimated at the
  tokens per character of the last request; before any report, at 1/4 (about four characters a
  token, typical for English text and code).
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
        self.ratio = DEFAULT_RATIO  # tokens per character of the whole last request
        self.added_ratio = DEFAULT_RATIO  # ... of what was added between the last two requests
        self.sent_chars = 0
        self.anchor: tuple[int, int] | None = None  # (characters, tokens) of the last reported request
        # the measured prefix of the history: how many messages, their characters, and its first
        # and last message. Between edits the history is only appended to, so a turn measures only
        # what was added (visiting every message each turn made a turn's cost grow with the
        # conversation). A new first or last message of the prefix is noticed; any other change
        # must be declared with edited().
        self._counted = 0
        self._counted_chars = 0
        self._ends: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None

    def chars(self) -> int:
        messages, counted = self.messages, self._counted
        if counted and (len(messages) < counted or self._ends is None
                        or messages[0] is not self._ends[0] or messages[counted - 1] is not self._ends[1]):
            counted = self._counted_chars = 0  # replaced without edited(): measure it all again
        if len(messages) > counted:
            self._counted_chars += sum(message_chars(m) for m in messages[counted:])
            self._counted, self._ends = len(messages), (messages[0], messages[-1])
        elif not messages:
            self._counted, self._ends = 0, None
        return self.fixed_chars + self._counted_chars

    def estimate(self) -> int:
        """Estimated input tokens of a request made of this view now."""
        chars = self.chars()
        if self.anchor is None:
            return math.ceil(chars * self.ratio)
        sent, seen = self.anchor
        return seen + math.ceil((chars - sent) * (self.added_ratio if chars >= sent else self.ratio))

    def sending(self) -> int:
        """Note the size of the request about to go out; returns its estimated tokens."""
        self.sent_chars = self.chars()
        return self.estimate()

    def edited(self) -> None:
        """The messages were changed, not just appended to: measure and estimate the whole view again."""
        self.anchor = None
        self._counted, self._counted_chars, self._ends = 0, 0, None

    def calibrate(self, report: Mapping[str, int]) -> None:
        """Learn from the usage report of the request last sent."""
        seen = u.input_tokens(report)
        if seen <= 0 or self.sent_chars <= 0:
            return
        if self.anchor is not None and self.sent_chars > self.anchor[0] and seen > self.anchor[1]:
            self.added_ratio = (seen - self.anchor[1]) / (self.sent_chars - self.anchor[0])
        else:
            self.added_ratio = seen / self.sent_chars
        self.ratio = seen / self.sent_chars
        self.anchor = (self.sent_chars, seen)
