"""Facts about the models the project names: context window, prices and prompt caching.

Prices are US dollars per million tokens, on demand: Bedrock's as listed in late 2026 for
cross-region inference profiles (`us.`, `eu.`, `global.` ...; a regional endpoint may cost a
little more), OpenAI's as its API price list gave them (standard tier). `model.pricing`
overrides or extends this table (see `agentapps.agent.usage`); a model served by another
OpenAI-compatible server (OpenRouter, a local one) has no price until `model.pricing` gives one.
A model id matches with or without its geography prefix (`us.anthropic...` = `anthropic...`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentapps.errors import ConfigError

DEFAULT_WINDOW = 200_000  # tokens, for a model this table does not know


@dataclass(frozen=True)
class Price:
    """USD per million tokens: plain input, output, and input read from / written to the cache."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass(frozen=True)
class ModelFacts:
    """What is known of one model: its context window, its price and its minimum cacheable prompt."""

    window: int  # context window, tokens
    price: Price
    cache_min: int = 0  # tokens a cache checkpoint needs; 0 = the model has no prompt caching
    cache_tools: bool = True  # the tool definitions fall under a cache point (not on Nova)


def _claude(window: int, inp: float, out: float, cache_min: int = 1024) -> ModelFacts:
    # Claude on Bedrock: a cache write costs 1.25x input, a cache read 0.1x
    return ModelFacts(window, Price(inp, out, round(inp * 0.1, 6), round(inp * 1.25, 6)), cache_min)


def _nova(window: int, inp: float, out: float) -> ModelFacts:
    # Nova: cache reads cost 0.25x input, writes cost plain input; tools are never cached
    return ModelFacts(window, Price(inp, out, round(inp * 0.25, 6), inp), 1000, cache_tools=False)


def _openai(window: int, inp: float, out: float, cached: float) -> ModelFacts:
    # OpenAI caches prompts of 1024 tokens or more by itself; cached input has its own price and
    # nothing is charged for writing the cache
    return ModelFacts(window, Price(inp, out, cached, inp), 1024)


MODELS: dict[str, ModelFacts] = {
    "anthropic.claude-sonnet-4-5-20250929-v1:0": _claude(200_000, 3.0, 15.0),
    "anthropic.claude-sonnet-4-20250514-v1:0": _claude(200_000, 3.0, 15.0),
    "anthropic.claude-3-7-sonnet-20250219-v1:0": _claude(200_000, 3.0, 15.0),
    "anthropic.claude-haiku-4-5-20251001-v1:0": _claude(200_000, 1.0, 5.0, cache_min=4096),
    "anthropic.claude-3-5-haiku-20241022-v1:0": _claude(200_000, 0.8, 4.0, cache_min=2048),
    "anthropic.claude-opus-4-5-20251101-v1:0": _claude(200_000, 5.0, 25.0),
    "anthropic.claude-opus-4-1-20250805-v1:0": _claude(200_000, 15.0, 75.0),
    "anthropic.claude-opus-4-20250514-v1:0": _claude(200_000, 15.0, 75.0),
    "amazon.nova-premier-v1:0": _nova(1_000_000, 2.5, 12.5),
    "amazon.nova-pro-v1:0": _nova(300_000, 0.8, 3.2),
    "amazon.nova-lite-v1:0": _nova(300_000, 0.06, 0.24),
    "amazon.nova-micro-v1:0": _nova(128_000, 0.035, 0.14),
    "gpt-5": _openai(400_000, 1.25, 10.0, 0.125),
    "gpt-5-mini": _openai(400_000, 0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(400_000, 0.05, 0.4, 0.005),
    "gpt-4.1": _openai(1_047_576, 2.0, 8.0, 0.5),
    "gpt-4.1-mini": _openai(1_047_576, 0.4, 1.6, 0.1),
    "gpt-4.1-nano": _openai(1_047_576, 0.1, 0.4, 0.025),
    "gpt-4o": _openai(128_000, 2.5, 10.0, 1.25),
    "gpt-4o-mini": _openai(128_000, 0.15, 0.6, 0.075),
    "o3": _openai(200_000, 2.0, 8.0, 0.5),
    "o4-mini": _openai(200_000, 1.1, 4.4, 0.275),
}


GEOGRAPHIES = ("us", "us-gov", "eu", "apac", "jp", "au", "ca", "global")


def base_id(model_id: str) -> str:
    """`us.anthropic.claude-...` -> `anthropic.claude-...` (drops an inference profile's prefix)."""
    head, dot, rest = model_id.partition(".")
    return rest if dot and head in GEOGRAPHIES else model_id


# the Anthropic API's names: `claude-sonnet-4-5-20250929` is Bedrock's
# `anthropic.claude-sonnet-4-5-20250929-v1:0`; an alias names the latest snapshot
ANTHROPIC_ALIASES = {"claude-sonnet-4-5": "claude-sonnet-4-5-20250929", "claude-haiku-4-5": "claude-haiku-4-5-20251001",
                     "claude-opus-4-5": "claude-opus-4-5-20251101", "claude-opus-4-1": "claude-opus-4-1-20250805",
                     "claude-sonnet-4-0": "claude-sonnet-4-20250514", "claude-opus-4-0": "claude-opus-4-20250514",
                     "claude-3-7-sonnet-latest": "claude-3-7-sonnet-20250219",
                     "claude-3-5-haiku-latest": "claude-3-5-haiku-20241022"}


def facts(model_id: str) -> ModelFacts | None:
    found = MODELS.get(model_id) or MODELS.get(base_id(model_id))
    if found is None and model_id.startswith("claude-"):
        found = MODELS.get(f"anthropic.{ANTHROPIC_ALIASES.get(model_id, model_id)}-v1:0")
    return found


def cache_mode(setting: object, model_id: str, skill: str | None = None) -> str | None:
    """Where the Bedrock provider puts cache points (`model.cache`): absent = after the system
    prompt and tool docs when the model supports prompt caching; `true` = there for any model;
    `"conversation"` = also after the latest message; `false` = nowhere."""
    if setting is None:
        found = facts(model_id)
        return "system" if found is not None and found.cache_min else None
    if setting is True or setting == "system":
        return "system"
    if setting == "conversation":
        return "conversation"
    if setting is False:
        return None
    raise ConfigError(f"Skill '{skill}' model.cache must be true, false or \"conversation\", not "
                      f"{setting!r}.", skill=skill, setting=("model", "cache"))
