"""Anthropic retry policy and error wording: what to retry, when a fallback model takes over, what
one line to say (with the exit code of its class). The `anthropic` SDK is imported only here and
in `agentapps.providers.anthropic_messages`, and only when an Anthropic model call is made."""

from __future__ import annotations

import re
from typing import Any

from agentapps.errors import (
    AgentAppsError,
    ConfigError,
    DeniedError,
    LimitError,
    ProviderError,
)
from agentapps.providers import http_errors

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx (529: overloaded)
RETRYABLE_TYPES = frozenset({"rate_limit_error", "overloaded_error", "api_error", "timeout_error"})
_TOO_LONG = re.compile(r"prompt is too long|context window|too many tokens|input length", re.IGNORECASE)
_KEY_SHAPE = re.compile(r"\bsk-ant-[A-Za-z0-9_-]{8,}")


def scrub(text: str, key_env: str = "ANTHROPIC_API_KEY", limit: int = 300) -> str:
    """One line, no key, bounded length: safe to show and to log."""
    return http_errors.scrub(text, (key_env, "ANTHROPIC_API_KEY"), _KEY_SHAPE, limit)


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and status >= 400 else None  # an error event comes with 200


def error_type(exc: BaseException) -> str:
    """The error body's `type`, e.g. `rate_limit_error`, `overloaded_error`, `not_found_error`."""
    return http_errors.body_field(exc, "type")


def said(exc: BaseException, key_env: str = "ANTHROPIC_API_KEY") -> str:
    """What the server said: the error body's message, else the exception's text."""
    return http_errors.said(exc, (key_env, "ANTHROPIC_API_KEY"), _KEY_SHAPE)


def _is_transport_failure(exc: BaseException) -> bool:
    import anthropic

    return http_errors.is_transport_failure(exc, anthropic.APIConnectionError)


def is_retryable(exc: BaseException) -> bool:
    """Rate limits, overload, 408/409, 5xx and broken connections; never another 4xx."""
    status = status_of(exc)
    if status is not None:
        return status in RETRYABLE_STATUS or status >= 500
    if error_type(exc) in RETRYABLE_TYPES:
        return True  # an error event inside the stream
    return _is_transport_failure(exc)


def fallback_reason(exc: BaseException) -> str | None:
    status, kind = status_of(exc), error_type(exc)
    if status == 429 or kind == "rate_limit_error":
        return "throttled"
    if status in (503, 529) or kind == "overloaded_error":
        return "unavailable"
    if status == 404:
        return "not found"
    if status == 403:
        return "no access"
    return None


def explain_error(exc: BaseException, *, model_id: str, base_url: str, key_env: str = "ANTHROPIC_API_KEY",
                  retries: int = 0, unsent: str = "") -> AgentAppsError:
    """Turn an `anthropic` SDK failure into one actionable line with the right exit code."""
    if isinstance(exc, AgentAppsError):
        return exc
    model = f"model '{model_id}' at {base_url}"
    message, status, kind = said(exc, key_env), status_of(exc), error_type(exc)
    tried = f" (retried {retries} time{'' if retries == 1 else 's'})" if retries else ""
    if status == 401:
        return ConfigError(f"The Anthropic API at {base_url} rejected the API key for {model_id!r} (401): set "
                           f"{key_env} to a valid key (the server said: {message}).{unsent}")
    if status == 403:
        return DeniedError(f"The Anthropic API refused {model} (403): the key may not use this model "
                           f"(the server said: {message})")
    if status == 404:
        return ConfigError(f"The Anthropic API has no {model} (404): check model.id (the server said: {message})")
    if status in (400, 413) and _TOO_LONG.search(message):
        return LimitError(f"The request is longer than the context window of {model} (the server said: "
                          f"{message}); set model.contextEdit: true to clear old tool results and "
                          "summarize old turns, or narrow the task.")
    if status == 429 or kind == "rate_limit_error":
        return ProviderError(f"The Anthropic API kept rate-limiting {model}{tried}: wait and run again, or set "
                             f"model.fallback (the server said: {message})")
    if status is not None and is_retryable(exc) or kind in RETRYABLE_TYPES:
        code = f"HTTP {status}" if status is not None else kind
        return ProviderError(f"The Anthropic API failed for {model}{tried}: {code}: {message}; try again later.")
    if status is not None:
        return ProviderError(f"The Anthropic API refused the request for {model}: HTTP {status}: {message}")
    if _is_transport_failure(exc):
        import anthropic

        if isinstance(exc, anthropic.APIConnectionError) and not isinstance(exc, anthropic.APITimeoutError):
            return ProviderError(f"Could not connect to {base_url} for {model_id!r}{tried}: check model.baseUrl / "
                                 "ANTHROPIC_BASE_URL and the network.")
        return ProviderError(f"The connection to {base_url} broke while streaming from {model_id!r}{tried}: "
                             f"{type(exc).__name__}: {message}; try again later.")
    return ProviderError(f"The Anthropic call failed for {model}: {type(exc).__name__}: {message}")


def describe(exc: Any, key_env: str = "ANTHROPIC_API_KEY") -> str:
    status = status_of(exc)
    return f"HTTP {status}: {said(exc, key_env)}" if status else said(exc, key_env)
