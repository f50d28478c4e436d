"""The streaming providers' own `model` settings (fallback, attempts, inference), each refused
with the setting it names so the run and `check` can point at the line that sets it. `agent-bedrock`
and `agent-openai` share them; only the temperature range differs (0-1 on Converse, 0-2 on OpenAI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentapps.errors import ConfigError

DEFAULT_OUTPUT_TOKENS = 4096


def model_ids(config: Mapping[str, Any], skill: str) -> list[str]:
    """The model id, then `model.fallback` in order."""
    fallback = config.get("fallback") or []
    if isinstance(fallback, str):
        fallback = [fallback]
    if not isinstance(fallback, list) or not all(isinstance(m, str) and m for m in fallback):
        raise ConfigError(f"Skill '{skill}' model.fallback must be a list of model ids.", skill=skill,
                          setting=("model", "fallback"))
    return [str(config["id"]), *fallback]


def attempts(config: Mapping[str, Any], skill: str) -> int:
    value = config.get("maxAttempts", 5)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 20:
        raise ConfigError(f"Skill '{skill}' model.maxAttempts must be a whole number from 1 to 20, "
                          f"not {value!r}.", skill=skill, setting=("model", "maxAttempts"))
    return value


def inference(config: Mapping[str, Any], skill: str, top: float = 1) -> dict[str, Any]:
    """The inference settings: `maxOutputTokens` (a whole number >= 1) and `temperature` (0 to
    `top`: 1 on Converse, 2 on OpenAI), refused here rather than by the service after a request."""
    cap = config.get("maxOutputTokens", DEFAULT_OUTPUT_TOKENS)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ConfigError(f"Skill '{skill}' model.maxOutputTokens must be a whole number >= 1, not {cap!r}.",
                          skill=skill, setting=("model", "maxOutputTokens"))
    temperature = config.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not 0 <= temperature <= top):
        raise ConfigError(f"Skill '{skill}' model.temperature must be a number from 0 to {top:g}, not "
                          f"{temperature!r}.", skill=skill, setting=("model", "temperature"))
    return {"maxTokens": cap, "temperature": temperature}
