"""Token usage and what it costs: the four counters, their sums, and prices with `model.pricing`.

A usage report has Bedrock's four counters: `inputTokens` (input not read from or written to the
prompt cache), `outputTokens`, `cacheReadInputTokens` and `cacheWriteInputTokens`. The cost of a
report is each counter times its price per million tokens. `model.pricing` maps a model id to
`{input, output, cacheRead, cacheWrite}` (USD per million tokens; the cache prices default to the
input price) and wins over the built-in table in `agentapps.agent.models`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agentapps.agent.models import Price, base_id, facts
from agentapps.errors import ConfigError

KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
INPUT_KEYS = ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
PRICE_KEYS = {"input": "input", "output": "output", "cacheRead": "cache_read", "cacheWrite": "cache_write"}


def empty() -> dict[str, int]:
    return dict.fromkeys(KEYS, 0)


def normalize(raw: Any) -> dict[str, int]:
    """The four counters of a provider's usage report; anything missing or malformed counts 0."""
    out = empty()
    if isinstance(raw, Mapping):
        for key in KEYS:
            value = raw.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                out[key] = value
    return out


def add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for key in KEYS:
        into[key] = into.get(key, 0) + int(more.get(key, 0))


def tokens(usage: Mapping[str, int]) -> int:
    """Every token of a report: what `model.maxTokens` counts."""
    return sum(int(usage.get(key, 0)) for key in KEYS)


def input_tokens(usage: Mapping[str, int]) -> int:
    """The whole input the model read (the size of the conversation it was sent)."""
    return sum(int(usage.get(key, 0)) for key in INPUT_KEYS)


def cost(usage: Mapping[str, int], price: Price) -> float:
    return (usage.get("inputTokens", 0) * price.input + usage.get("outputTokens", 0) * price.output
            + usage.get("cacheReadInputTokens", 0) * price.cache_read
            + usage.get("cacheWriteInputTokens", 0) * price.cache_write) / 1_000_000


def price_for(model_id: str, pricing: Any, skill: str | None = None) -> Price | None:
    """The price of `model_id`: `model.pricing` first, then the built-in table, else None."""
    if pricing is not None and not isinstance(pricing, Mapping):
        raise ConfigError(f"Skill '{skill}' model.pricing must map model ids to prices, like "
                          "{\"my-model\": {\"input\": 3, \"output\": 15}}.", skill=skill,
                          setting=("model", "pricing"))
    named = model_id if (pricing or {}).get(model_id) else base_id(model_id)  # the key it is under
    entry = (pricing or {}).get(named)
    if entry is None:
        found = facts(model_id)
        return found.price if found else None
    if not isinstance(entry, Mapping) or "input" not in entry or "output" not in entry:
        raise ConfigError(f"Skill '{skill}' model.pricing for '{model_id}' needs `input` and `output` "
                          "(USD per million tokens).", skill=skill,
                          setting=("model", "pricing", named))
    values: dict[str, float] = {}
    for key, field in PRICE_KEYS.items():
        value = entry.get(key, entry["input"] if key.startswith("cache") else None)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
                or math.isinf(value):
            raise ConfigError(f"Skill '{skill}' model.pricing['{model_id}'].{key} must be a number "
                              f">= 0 (USD per million tokens), not {value!r}.", skill=skill,
                              setting=("model", "pricing", named, key))
        values[field] = float(value)
    return Price(**values)


def unpriced(model_id: str, skill: str) -> ConfigError:
    """A cost budget cannot be kept for a model without a price."""
    return ConfigError(f"Model '{model_id}' has no known price, so the cost budget of '{skill}' cannot be "
                       "kept: add it to model.pricing (USD per million tokens: {input, output, cacheRead, "
                       "cacheWrite}).", skill=skill, setting=("model", "maxCost"))
