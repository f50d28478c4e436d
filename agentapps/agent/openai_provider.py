"""The `agent-openai` provider: the shared streaming loop (`agentapps.agent.converse`) over the
Chat Completions API of OpenAI or a compatible server, through agentapps.providers.openai_chat.

`model` settings: `id`, `api` (`chat`, the default: Chat Completions; `responses`: the Responses
API), `baseUrl` (else OPENAI_BASE_URL, else OpenAI), `apiKeyEnv` (the variable
holding the key, default OPENAI_API_KEY), `temperature` (0 to 2), `maxOutputTokens`,
`maxAttempts`, `fallback`, `requestTimeout` (seconds a read may take, default 600) and the
settings every provider shares (limits, budgets, `pricing`, `contextEdit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from agentapps.agent.converse import Backend, run_streaming
from agentapps.core.cleanup import register
from agentapps.errors import ConfigError
from agentapps.providers.endpoint import NOTHING_TRUSTED, Trusted

if TYPE_CHECKING:
    from agentapps.context.context import Context
    from agentapps.providers.endpoint import Endpoint

DEFAULT_READ_TIMEOUT = 600.0
APIS = ("chat", "responses")


def endpoint(config: Mapping[str, Any], skill: str, trusted: Trusted = NOTHING_TRUSTED) -> Endpoint:
    from agentapps.providers.openai_chat import endpoint_of

    return endpoint_of(dict(config), skill, trusted)


class Bound(NamedTuple):
    """An SDK client and the endpoint it was made for (whether it carries the key included)."""

    sdk: Any
    endpoint: Endpoint


def cached_client(ctx: Context, name: str, key: Any, make: Callable[[], Bound]) -> Bound:
    """The process's client for `key` (made on first use), closed with the process's cleanups: an
    SDK client holds pooled connections that would otherwise be left to the garbage collector."""
    cache = ctx.globals.cache_for(name)
    if key not in cache:
        bound = cache[key] = make()

        async def close() -> None:
            cache.pop(key, None)
            bound.sdk.close()

        register(ctx.globals.internals, close)
    return cache[key]  # type: ignore[no-any-return]


def project_trusted(ctx: Context) -> Trusted:
    """The `model.baseUrl` and `model.apiKeyEnv` the project set in its main skill (after `--local`):
    besides the vendor's URL and variables, the one place a key is sent to and the one other
    variable it is read from. A skill's own are not."""
    main = ctx.globals.config.main_tool
    model = main.metadata.get("model") if main is not None else None
    if not isinstance(model, Mapping):
        return Trusted()
    url, key_env = model.get("baseUrl"), model.get("apiKeyEnv")
    return Trusted(urls=(url,) if isinstance(url, str) else (),
                   key_envs=(key_env,) if isinstance(key_env, str) else ())


def read_timeout(config: Mapping[str, Any], skill: str) -> float:
    value = config.get("requestTimeout", DEFAULT_READ_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"Skill '{skill}' model.requestTimeout must be a number of seconds > 0, not "
                          f"{value!r}.", skill=skill, setting=("model", "requestTimeout"))
    return float(value)


def api_of(config: Mapping[str, Any], skill: str) -> str:
    """`model.api`: which OpenAI API the turns go through."""
    value = config.get("api", "chat")
    if value not in APIS:
        raise ConfigError(f"Skill '{skill}' model.api must be \"chat\" (Chat Completions) or \"responses\" "
                          f"(the Responses API), not {value!r}.", skill=skill, setting=("model", "api"))
    return str(value)


def _client(ctx: Context, config: Mapping[str, Any], skill: str, attempts: int) -> Any:
    from agentapps.providers.openai_chat import make_client

    where, timeout = endpoint(config, skill, project_trusted(ctx)), read_timeout(config, skill)
    return cached_client(ctx, "openai.clients", (where, timeout),
                         lambda: Bound(make_client(where, read_timeout=timeout), where))


def _turn(client: Bound, config: Mapping[str, Any], skill: str, *, cache: bool = True, **kw: Any) -> Any:
    # OpenAI caches by itself: `cache` has nothing to place
    if api_of(config, skill) == "responses":
        from agentapps.providers import openai_responses

        return openai_responses.stream_turn(client.sdk, endpoint=client.endpoint, **kw)
    from agentapps.providers import openai_chat

    return openai_chat.stream_turn(client.sdk, endpoint=client.endpoint, **kw)


def _fallback(exc: BaseException) -> str | None:
    from agentapps.providers.openai_errors import fallback_reason

    return fallback_reason(exc)


def _retryable(exc: BaseException) -> bool:
    from agentapps.providers.openai_errors import is_retryable

    return is_retryable(exc)


OPENAI = Backend(_client, _turn, _fallback, _retryable, temperature_top=2)


async def run_openai(ctx: Context, args: dict[str, Any]) -> Any:
    """The provider contract over Chat Completions: turns, tool calls through invokeRef, hooks."""
    return await run_streaming(ctx, args, OPENAI)
