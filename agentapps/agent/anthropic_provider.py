"""The `agent-anthropic` provider: the shared streaming loop (`agentapps.agent.converse`) over the
Anthropic Messages API, through agentapps.providers.anthropic_messages.

`model` settings: `id`, `baseUrl` (else ANTHROPIC_BASE_URL, else Anthropic), `apiKeyEnv` (the
variable holding the key, default ANTHROPIC_API_KEY), `temperature` (0 to 1), `maxOutputTokens`,
`maxAttempts`, `fallback`, `cache`, `requestTimeout` and the settings every provider shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentapps.agent.converse import Backend, run_streaming
from agentapps.agent.models import cache_mode
from agentapps.agent.openai_provider import Bound, cached_client, project_trusted, read_timeout
from agentapps.providers.endpoint import NOTHING_TRUSTED, Trusted

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.providers.endpoint import Endpoint


def endpoint(config: Mapping[str, Any], skill: str, trusted: Trusted = NOTHING_TRUSTED) -> Endpoint:
    from agentapps.providers.anthropic_messages import endpoint_of

    return endpoint_of(dict(config), skill, trusted)


def _client(ctx: Context, config: Mapping[str, Any], skill: str, attempts: int) -> Any:
    from agentapps.providers.anthropic_messages import make_client

    where, timeout = endpoint(config, skill, project_trusted(ctx)), read_timeout(config, skill)
    return cached_client(ctx, "anthropic.clients", (where, timeout),
                         lambda: Bound(make_client(where, read_timeout=timeout), where))


def _turn(client: Bound, config: Mapping[str, Any], skill: str, *, model_id: str, cache: bool = True,
          **kw: Any) -> Any:  # fmt: skip
    from agentapps.providers.anthropic_messages import stream_turn

    mode = cache_mode(config.get("cache"), model_id, skill) if cache else None
    return stream_turn(client.sdk, endpoint=client.endpoint, model_id=model_id, cache=mode, **kw)


def _fallback(exc: BaseException) -> str | None:
    from agentapps.providers.anthropic_errors import fallback_reason

    return fallback_reason(exc)


def _retryable(exc: BaseException) -> bool:
    from agentapps.providers.anthropic_errors import is_retryable

    return is_retryable(exc)


ANTHROPIC = Backend(_client, _turn, _fallback, _retryable)


async def run_anthropic(ctx: Context, args: dict[str, Any]) -> Any:
    """The provider contract over the Messages API: turns, tool calls through invokeRef, hooks."""
    return await run_streaming(ctx, args, ANTHROPIC)
