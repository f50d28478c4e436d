"""OpenAI retry policy and error wording: what to retry, when a fallback model takes over, what
one line to say (with the exit code of its class). The `openai` SDK is imported only here and in
`agentapps.providers.openai_chat`, and only when an OpenAI model call is made."""

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
from agentapps.providers.endpoint import Endpoint
from agentapps.providers.http_errors import retry_after
from agentapps.providers.stream_thread import Vendor

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx
_TOO_LONG = re.compile(r"context[_ ]length|context window|maximum context|too many tokens|prompt is too long",
                       re.IGNORECASE)
_KEY_SHAPE = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,})")


def scrub(text: str, key_env: str = "OPENAI_API_KEY", limit: int = 300) -> str:
    """One line, no key, bounded length: safe to show and to log."""
    return http_errors.scrub(text, (key_env, "OPENAI_API_KEY"), _KEY_SHAPE, limit)


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def error_code(exc: BaseException) -> str:
    """The `code` (else `type`) of the error body, e.g. `insufficient_quota`, `model_not_found`."""
    return http_errors.body_field(exc, "code", "type")


def said(exc: BaseException, key_env: str = "OPENAI_API_KEY") -> str:
    """What the server said: the error body's message, else the exception's text."""
    return http_errors.said(exc, (key_env, "OPENAI_API_KEY"), _KEY_SHAPE)


def _is_transport_failure(exc: BaseException) -> bool:
    import openai

    return http_errors.is_transport_failure(exc, openai.APIConnectionError)


def is_retryable(exc: BaseException) -> bool:
    """Rate limits (not an exhausted quota), 408/409, 5xx and broken connections; never 4xx else."""
    status = status_of(exc)
    if status is not None:
        if error_code(exc) == "insufficient_quota":
            return False
        return status in RETRYABLE_STATUS or status >= 500
    if error_code(exc) in ("server_error", "rate_limit_exceeded", "overloaded_error"):
        return True  # an error event inside the stream
    return _is_transport_failure(exc)


def fallback_reason(exc: BaseException) -> str | None:
    """Why the next of `model.fallback` should take over after `exc` (already retried), or None."""
    status, code = status_of(exc), error_code(exc)
    if status == 429 and code != "insufficient_quota":
        return "throttled"
    if status in (502, 503, 529):
        return "unavailable"
    if status == 404:
        return "not found"
    if status == 403:
        return "no access"
    return None


def explain_error(exc: BaseException, *, model_id: str, base_url: str, key_env: str = "OPENAI_API_KEY",
                  retries: int = 0, unsent: str = "") -> AgentAppsError:
    """Turn an `openai` SDK failure into one actionable line with the right exit code."""
    if isinstance(exc, AgentAppsError):
        return exc
    model = f"model '{model_id}' at {base_url}"
    message = said(exc, key_env)
    status, code = status_of(exc), error_code(exc)
    tried = f" (retried {retries} time{'' if retries == 1 else 's'})" if retries else ""
    if status == 401:
        return ConfigError(f"The OpenAI API at {base_url} rejected the API key for {model_id!r} (401): set "
                           f"{key_env} to a valid key, or model.baseUrl / OPENAI_BASE_URL to the server "
                           f"it belongs to (the server said: {message}).{unsent}")
    if status == 403:
        return DeniedError(f"The OpenAI API refused {model} (403): the key may not use this model or "
                           f"project (the server said: {message})")
    if status == 404:
        return ConfigError(f"The OpenAI API has no {model} (404): check model.id and model.baseUrl / "
                           f"OPENAI_BASE_URL (the server said: {message})")
    if code == "context_length_exceeded" or (status in (400, 413) and _TOO_LONG.search(message)):
        return LimitError(f"The request is longer than the context window of {model} (the server said: "
                          f"{message}); set model.contextEdit: true to clear old tool results and "
                          "summarize old turns, or narrow the task.")
    if code == "insufficient_quota":
        return ProviderError(f"The OpenAI account behind {key_env} has no quota left for {model}: check its "
                             f"plan and billing (the server said: {message})")
    if status == 429:
        return ProviderError(f"The OpenAI API kept rate-limiting {model}{tried}: wait and run again, or set "
                             f"model.fallback (the server said: {message})")
    if status is not None and is_retryable(exc):
        return ProviderError(f"The OpenAI API failed for {model}{tried}: HTTP {status}: {message}; try "
                             "again later.")
    if status is not None:
        return ProviderError(f"The OpenAI API refused the request for {model}: HTTP {status}: {message}")
    if _is_transport_failure(exc):
        import openai

        if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError):
            return ProviderError(f"Could not connect to {base_url} for {model_id!r}{tried}: is the server "
                                 "running? Check model.baseUrl / OPENAI_BASE_URL and the network.")
        return ProviderError(f"The connection to {base_url} broke while streaming from {model_id!r}{tried}: "
                             f"{type(exc).__name__}: {message}; try again later.")
    if is_retryable(exc):
        return ProviderError(f"The OpenAI API failed while streaming {model}{tried}: {message}")
    return ProviderError(f"The OpenAI call failed for {model}: {type(exc).__name__}: {message}")


def describe(exc: Any, key_env: str = "OPENAI_API_KEY") -> str:
    """A short text of a failure that will be retried (the `retry` event's `error`)."""
    status = status_of(exc)
    return f"HTTP {status}: {said(exc, key_env)}" if status else said(exc, key_env)


def vendor(endpoint: Endpoint, model_id: str) -> Vendor:
    """How the retry loop (`stream_thread.retried`) judges and tells an OpenAI failure, for both
    the Chat Completions and the Responses API."""
    return Vendor("OpenAI", is_retryable, retry_after,
                  lambda exc, tries: explain_error(exc, model_id=model_id, base_url=endpoint.base_url,
                                                   key_env=endpoint.key_env, retries=tries,
                                                   unsent=endpoint.unsent_key("OPENAI_BASE_URL")),
                  lambda exc: describe(exc, endpoint.key_env))
