"""Bedrock retry policy and error wording: what to retry, how long to wait, what one line to say."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable

from agentapps.errors import (
    AgentAppsError,
    ConfigError,
    DeniedError,
    LimitError,
    ProviderError,
    RunInterruptedError,
)

# Error codes compared lowercased: mid-stream exception frames say `throttlingException`, HTTP
# errors say `ThrottlingException`.
RETRYABLE_CODES = frozenset(
    {
        "throttlingexception",
        "throttling",
        "toomanyrequestsexception",
        "serviceunavailableexception",
        "internalserverexception",
        "internalfailure",
        "modelstreamerrorexception",
        "modelnotreadyexception",
        "modeltimeoutexception",
        "requesttimeout",
        "requesttimeoutexception",
    }
)
THROTTLING_CODES = frozenset({"throttlingexception", "throttling", "toomanyrequestsexception"})
BAD_CREDENTIAL_CODES = frozenset(
    {
        "unrecognizedclientexception",
        "invalidsignatureexception",
        "signaturedoesnotmatch",
        "incompletesignature",
        "invalidclienttokenid",
        "expiredtokenexception",
        "expiredtoken",
    }
)
SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
              "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID")  # fmt: skip
# what Bedrock says when a request does not fit the model's context window
_TOO_LONG = re.compile(r"input is too long|prompt is too long|too many input tokens|context window|"
                       r"context length", re.IGNORECASE)
_ACCESS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{12,}\b")
_CREDENTIALS_HELP = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, run `aws configure` "
    "(or `aws sso login`), or select a configured profile with AWS_PROFILE"
)


class IncompleteStreamError(Exception):
    """The stream ended without `messageStop`: transient, retried, then explained."""


class StreamFailed(Exception):
    """Wraps a failure of the Bedrock call itself, told apart from errors raised by callbacks."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code") or "")
    return ""


def scrub(text: str, limit: int = 300) -> str:
    """One line, no credential values, bounded length: safe to show and to log."""
    for name in SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    text = _ACCESS_KEY_ID.sub("***", " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def aws_message(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        message = str(response.get("Error", {}).get("Message") or "")
        if message:
            return scrub(message)
    return scrub(str(exc)) or type(exc).__name__


def _is_transport_failure(exc: BaseException) -> bool:
    """A connection that broke or stalled while the stream was being read."""
    from botocore.exceptions import (  # type: ignore[import-untyped,unused-ignore]
        ConnectionClosedError,
        ReadTimeoutError,
        ResponseStreamingError,
    )
    from urllib3.exceptions import ProtocolError
    from urllib3.exceptions import ReadTimeoutError as RawReadTimeoutError

    transport = (ConnectionClosedError, ReadTimeoutError, ResponseStreamingError, ProtocolError,
                 RawReadTimeoutError, IncompleteStreamError)  # fmt: skip
    return isinstance(exc, transport)


def is_retryable(exc: BaseException) -> bool:
    """Throttling, 5xx-style and broken-stream failures; never validation, access or not-found."""
    code = error_code(exc).lower()
    if code.isdigit():  # botocore's code for an error reply that named no type: the HTTP status
        return code == "429" or code.startswith("5")
    if code:
        return code in RETRYABLE_CODES
    return _is_transport_failure(exc)


def fallback_reason(exc: BaseException) -> str | None:
    """Why a fallback model should take over after `exc` (already retried), or None: the model
    kept throttling, is unavailable, or is not offered to this account in this region."""
    code, said = error_code(exc).lower(), aws_message(exc).lower()
    if code in THROTTLING_CODES or code == "429":
        return "throttled"
    if code in ("serviceunavailableexception", "modelnotreadyexception") or code == "503":
        return "unavailable"
    if code == "resourcenotfoundexception":
        return "not found"
    if code == "validationexception" and ("on-demand throughput" in said
                                          or "model identifier is invalid" in said):
        return "not available"
    if code == "accessdeniedexception" and "access to the model" in said:
        return "no access"
    return None


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
    return random.uniform(0, min(cap, base * 2**attempt))


def pause(
    delay: float, sleep: Callable[[float], None], cancelled: Callable[[], bool] | None,
    service: str = "Bedrock",
) -> None:  # fmt: skip
    """Sleep in short slices so an interrupt during backoff is noticed promptly."""
    left = delay
    while True:
        if cancelled is not None and cancelled():
            raise RunInterruptedError(f"Interrupted while waiting to retry {service}.")
        if left <= 0:
            return
        step = min(left, 0.25)
        sleep(step)
        left -= step


def profile_prefix(region: str | None) -> str:
    """The cross-region inference-profile prefix that serves a region (us., eu., apac.)."""
    area = (region or "us").split("-", 1)[0]
    return {"eu": "eu", "ap": "apac", "us": "us", "ca": "us"}.get(area, "us")


def explain_error(
    exc: BaseException, *, model_id: str, region: str | None, retries: int = 0
) -> AgentAppsError:
    """Turn a botocore/boto3 failure into one actionable line with the right exit code."""
    if isinstance(exc, AgentAppsError):
        return exc
    from botocore.exceptions import (  # type: ignore[import-untyped,unused-ignore]
        ConnectTimeoutError,
        CredentialRetrievalError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        ProfileNotFound,
    )

    where = f"in region {region}" if region else "(no region set)"
    model = f"model '{model_id}' {where}"
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError)):
        return ConfigError(f"No usable AWS credentials for Bedrock {model}: {_CREDENTIALS_HELP}.")
    if isinstance(exc, ProfileNotFound):
        return ConfigError(
            f"{aws_message(exc)}: fix AWS_PROFILE or add the profile to ~/.aws/config."
        )
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError)):
        url = scrub(str(getattr(exc, "kwargs", {}).get("endpoint_url") or "the Bedrock endpoint"))
        return ProviderError(
            f"Could not connect to {url} for Bedrock {model}: check the network, the region "
            "name and AWS_ENDPOINT_URL_BEDROCK_RUNTIME if you set it."
        )
    code = error_code(exc)
    lowered, said = code.lower(), aws_message(exc)
    tried = f" (retried {retries} time{'' if retries == 1 else 's'})" if retries else ""
    if lowered == "accessdeniedexception":
        return DeniedError(
            f"AWS denied access to Bedrock {model}: allow bedrock:InvokeModelWithResponseStream "
            "on it in your IAM policy and enable access to the model in the Bedrock console "
            f"(AWS said: {said})"
        )
    if lowered in BAD_CREDENTIAL_CODES:
        return ConfigError(
            f"AWS rejected the credentials for Bedrock {model} ({code}): they are invalid or "
            f"expired; refresh them: {_CREDENTIALS_HELP}."
        )
    if lowered == "resourcenotfoundexception":
        return ConfigError(
            f"Bedrock {model} was not found or is not enabled (AWS said: {said}); check the model "
            f"id with `aws bedrock list-foundation-models --region {region or '<region>'}` and "
            "enable it in the Bedrock console."
        )
    if lowered == "validationexception" and _TOO_LONG.search(said):
        return LimitError(
            f"The request is longer than the context window of Bedrock {model} (AWS said: {said}); "
            "set model.contextEdit: true to clear old tool results and summarize old turns, or "
            "narrow the task."
        )
    if lowered == "validationexception" and "on-demand throughput" in said.lower():
        return ConfigError(
            f"Bedrock {model} cannot be invoked with on-demand throughput: use an inference "
            f"profile id such as '{profile_prefix(region)}.{model_id}' as the model id."
        )
    if lowered == "validationexception" and "model identifier is invalid" in said.lower():
        return ConfigError(f"Bedrock does not know {model}; check the model id's spelling.")
    if lowered in THROTTLING_CODES:
        return ProviderError(
            f"Bedrock kept throttling {model}{tried}: wait and run again, ask for a higher quota "
            "(Service Quotas), or use a cross-region inference profile."
        )
    if lowered in RETRYABLE_CODES or (code.isdigit() and is_retryable(exc)):
        return ProviderError(f"Bedrock failed for {model}{tried}: {code}: {said}; try again later.")
    if lowered == "servicequotaexceededexception":
        return ProviderError(f"Bedrock quota exceeded for {model}: {said}; ask for a higher quota.")
    if code:
        return ProviderError(f"Bedrock refused the request for {model}: {code}: {said}")
    if _is_transport_failure(exc):
        return ProviderError(
            f"The connection to Bedrock broke while streaming from {model}{tried}: "
            f"{type(exc).__name__}: {said}; try again later."
        )
    return ProviderError(f"Bedrock call failed for {model}: {type(exc).__name__}: {said}")
