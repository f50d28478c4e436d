"""Values of the environment variables skills declare in `metadata.env`: remembered, then redacted."""

from __future__ import annotations

import json
import os
from typing import Any

MIN_SECRET = 4  # shorter values would redact ordinary words


def register_declared(internals: dict[str, Any], names: Any) -> None:
    """Remember the current values of declared variables so nothing we print can show them."""
    if not isinstance(names, list):
        return
    found: set[str] = internals.setdefault("secrets", set())
    for name in names:
        value = os.environ.get(str(name))
        if value and len(value) >= MIN_SECRET:
            found.add(value)
            found.add(json.dumps(value)[1:-1])  # as it appears inside JSON text


def redact(text: str, internals: dict[str, Any] | None) -> str:
    secrets = (internals or {}).get("secrets")
    if not secrets:
        return text
    for value in sorted(secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "[redacted]")
    return text
