"""What the OpenAI and Anthropic SDKs' failures have in common: the JSON error body and its fields,
the `Retry-After` header, a broken connection, and the one safe line of what the server said (no
key, bounded length). Each vendor's module (openai_errors, anthropic_errors) decides the rest."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from agentapps.providers.bedrock_errors import IncompleteStreamError


def scrub(text: str, key_envs: Iterable[str], shape: re.Pattern[str], limit: int = 300) -> str:
    """One line, no key (the values of `key_envs`, and anything of the key's `shape`), at most
    `limit` characters: safe to show and to log."""
    for name in set(key_envs):
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    text = shape.sub("***", " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def body_field(exc: BaseException, *names: str) -> str:
    """The first of `names` set in the error body (`{"error": {...}}` or the bare object), else ""."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for name in names:
                if inner.get(name):
                    return str(inner[name])
    return ""


def said(exc: BaseException, key_envs: Iterable[str], shape: re.Pattern[str]) -> str:
    """What the server said: the error body's message, else the exception's text; scrubbed."""
    return scrub(body_field(exc, "message") or str(exc), key_envs, shape) or type(exc).__name__


def retry_after(exc: BaseException) -> float | None:
    """The server's `Retry-After` (seconds), when it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def is_transport_failure(exc: BaseException, connection_error: type[BaseException]) -> bool:
    """The connection could not be made (the SDK's `connection_error`), broke or stalled, before
    or while streaming."""
    if isinstance(exc, (connection_error, IncompleteStreamError)):
        return True
    # a read that breaks mid-stream raises the SDK's HTTP library's own error (httpx or httpx2)
    return any(c.__name__ == "TransportError" and c.__module__.split(".")[0] in ("httpx", "httpx2")
               for c in type(exc).__mro__)
