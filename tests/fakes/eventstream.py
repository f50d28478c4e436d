"""AWS event-stream frames (vnd.amazon.eventstream) and the Converse payloads Bedrock sends.

Frame layout (all integers big-endian):

    total length (4) | headers length (4) | CRC32 of the previous 8 bytes (4)
    headers: name length (1) | name | value type (1, 7 = string) | value length (2) | value
    payload
    CRC32 of everything before it (4)

botocore only ships a decoder (`botocore.eventstream.EventStreamBuffer`); the tests decode these
frames with it to prove they are valid.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from typing import Any

STRING_TYPE = 7
PRELUDE_LENGTH = 12  # total length, headers length, prelude CRC
MESSAGE_CRC_LENGTH = 4


def _crc32(data: bytes, crc: int = 0) -> int:
    return zlib.crc32(data, crc) & 0xFFFFFFFF


def encode_headers(headers: dict[str, str]) -> bytes:
    """String headers only: that is all Bedrock's converse-stream uses."""
    out = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        if len(raw_name) > 255 or len(raw_value) > 0xFFFF:
            raise ValueError(f"event-stream header too long: {name!r}")
        out += struct.pack(">B", len(raw_name)) + raw_name
        out += struct.pack(">BH", STRING_TYPE, len(raw_value)) + raw_value
    return bytes(out)


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One complete frame: prelude, prelude CRC, headers, payload, message CRC."""
    raw_headers = encode_headers(headers)
    total = PRELUDE_LENGTH + len(raw_headers) + len(payload) + MESSAGE_CRC_LENGTH
    prelude = struct.pack(">II", total, len(raw_headers))
    head = prelude + struct.pack(">I", _crc32(prelude))
    body = head + raw_headers + payload
    return body + struct.pack(">I", _crc32(body))


def event_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """A `:message-type: event` frame such as `contentBlockDelta`."""
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(payload).encode("utf-8"))


def exception_frame(exception_type: str, message: str) -> bytes:
    """A mid-stream error such as `throttlingException`; botocore raises it as EventStreamError."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode("utf-8"))


def converse_events(
    blocks: list[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, int],
    text_deltas: list[str] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """The `(event type, payload)` sequence Bedrock streams for one assistant message.

    Text goes out word by word (or as `text_deltas`); a tool use gets a `contentBlockStart` and its
    JSON input split into about three string fragments, as Bedrock does.
    """
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(blocks):
        if "text" in block:
            pieces = text_deltas or re.findall(r"\s*\S+\s*", block["text"]) or [block["text"]]
            deltas = [{"text": piece} for piece in pieces]
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            events.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            raw = json.dumps(use["input"])
            step = max(1, -(-len(raw) // 3))
            deltas = [{"toolUse": {"input": raw[i : i + step]}} for i in range(0, len(raw), step)]
        for delta in deltas:
            events.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    events.append(("messageStop", {"stopReason": stop_reason}))
    totals = {**usage, "totalTokens": sum(usage.values())}
    events.append(("metadata", {"usage": totals, "metrics": {"latencyMs": 1}}))
    return events


def converse_response(
    blocks: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]
) -> dict[str, Any]:
    """The JSON body of a non-streamed `converse` answer."""
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": stop_reason,
        "usage": {**usage, "totalTokens": sum(usage.values())},
        "metrics": {"latencyMs": 1},
    }
