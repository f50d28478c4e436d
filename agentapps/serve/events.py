"""Agent trace entries as `agentapps serve` stream events: the one place their names are mapped.

The stream uses the seed's names (`agent-start`, `turn-start`, `turn-end`, `tool-call`,
`tool-result`, `tool-error`, `agent-message`, `agent-error`, `agent-complete`) plus `text-delta`
for streamed model text and `steer` / `follow-up` when the agent takes a message a client sent
(`POST /steer`, `POST /follow-up`),
. Trace entries are mapped here whatever the trace calls them, so renaming
them in the agent is one edit of `NAMES`.
"""

from __future__ import annotations

from typing import Any

NAMES = {
    "agent-start": "agent-start", "turn-start": "turn-start", "turn-end": "turn-end",
    "tool-call": "tool-call", "tool-result": "tool-result", "tool-error": "tool-error",
    "message": "agent-message", "agent-message": "agent-message",
    "error": "agent-error", "agent-error": "agent-error", "agent-complete": "agent-complete",
    "agent-steer": "steer", "agent-follow-up": "follow-up",
}
DROPPED = ("type", "conversation")  # the name travels as the SSE event; a conversation is too big


def stream_event(type_: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(event name, payload) for a trace entry, or None when clients are not told about it."""
    name = NAMES.get(type_)
    if name is None:
        return None
    if name == "agent-message" and data.get("delta"):
        return "text-delta", {"text": str(data.get("text") or ""), "agent": data.get("agent")}
    if name == "tool-result" and data.get("status") == "error":
        name = "tool-error"
    return name, {k: v for k, v in data.items() if k not in DROPPED}
