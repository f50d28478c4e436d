"""Model config for one agent run: defaults, CLI/env overrides, limits, and what sub-agents inherit."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentapps.errors import ConfigError

DEFAULT_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
DEFAULT_PROVIDER = "agent-bedrock"
SCRIPTED_PROVIDER = "agent-scripted"
OPENAI_PROVIDER = "agent-openai"
ANTHROPIC_PROVIDER = "agent-anthropic"
# `model.provider`'s short names; any other value names a provider skill, like `model.agent`
PROVIDERS = {"bedrock": DEFAULT_PROVIDER, "openai": OPENAI_PROVIDER, "anthropic": ANTHROPIC_PROVIDER,
             "scripted": SCRIPTED_PROVIDER}
# the model a provider uses when no `model.id`, `--model` or AGENTAPPS_MODEL names one
DEFAULT_MODELS = {DEFAULT_PROVIDER: DEFAULT_MODEL, OPENAI_PROVIDER: "gpt-4.1",
                  ANTHROPIC_PROVIDER: "claude-sonnet-4-5"}
# keys agent code may not choose when it starts a sub-agent: they come from the parent agent
# (contextFull names a skill the agent itself calls; pricing decides what budgets count)
LIMIT_KEYS = ("maxTurns", "maxSteps", "snippetTimeout", "maxResultChars", "loopGuard", "maxReminders",
              "deadline", "maxTokens", "maxCost")
UNBOUNDED_WHEN_PERSISTENT = ("maxTurns", "maxSteps", "deadline")


@dataclass(frozen=True)
class Limits:
    """What bounds one run (see SECURITY.md "Loops end")."""

    max_turns: float = 30
    max_steps: float = 30
    snippet_timeout: float = 30.0
    max_result_chars: int = 30_000
    loop_guard: int = 3
    max_reminders: int = 3
    deadline: float = 1800.0  # seconds of wall clock for the whole run
    max_tokens: float = math.inf  # every token of the run's turns (model.maxTokens)
    max_cost: float = math.inf  # USD (model.maxCost)
    persistent: bool = False
    retry_base: float = 1.0
    retry_cap: float = 30.0

    def as_config(self) -> dict[str, float]:
        """These limits as `model` config keys (what a confined sub-agent may not exceed)."""
        return {"maxTurns": self.max_turns, "maxSteps": self.max_steps,
                "snippetTimeout": self.snippet_timeout, "maxResultChars": self.max_result_chars,
                "loopGuard": self.loop_guard, "maxReminders": self.max_reminders,
                "deadline": self.deadline, "maxTokens": self.max_tokens, "maxCost": self.max_cost}

    @classmethod
    def from_config(cls, config: Mapping[str, Any], skill: str) -> Limits:
        persistent = config.get("persistent") is True
        values = {field: limit(config, key, skill) for key, field, *_ in LIMITS}
        return cls(**values, persistent=persistent)


# model key, Limits field, default, minimum, whole number
LIMITS: tuple[tuple[str, str, float, float, bool], ...] = (
    ("maxTurns", "max_turns", 30, 1, False),
    ("maxSteps", "max_steps", 30, 0, False),
    ("snippetTimeout", "snippet_timeout", 30.0, 0.05, False),
    ("maxResultChars", "max_result_chars", 30_000, 200, True),
    ("loopGuard", "loop_guard", 3, 2, True),
    ("maxReminders", "max_reminders", 3, 0, True),
    ("deadline", "deadline", 1800.0, 0.05, False),
    ("maxTokens", "max_tokens", math.inf, 1, False),
    ("maxCost", "max_cost", math.inf, 0, False),
    ("retryBase", "retry_base", 1.0, 0, False),
    ("retryCap", "retry_cap", 30.0, 0, False),
)
_SPECS = {key: (default, minimum, integer) for key, _, default, minimum, integer in LIMITS}


def limit(config: Mapping[str, Any], key: str, skill: str) -> Any:
    """The value of one limit (`model.<key>`), or a ConfigError naming it."""
    default, minimum, integer = _SPECS[key]
    value = config.get(key)
    if value is None:  # persistent runs loop until stopped unless bounded explicitly
        persistent = config.get("persistent") is True
        return math.inf if persistent and key in UNBOUNDED_WHEN_PERSISTENT else default
    if value == "Infinity" or value == math.inf:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= minimum:
        raise ConfigError(f"Skill '{skill}' model.{key} must be a number >= {minimum:g}, not {value!r}.",
                          skill=skill, setting=("model", key))
    return int(value) if integer else value


def limit_problems(config: Mapping[str, Any], skill: str) -> list[ConfigError]:
    """Every limit the run would refuse (Limits.from_config stops at the first)."""
    problems: list[ConfigError] = []
    for key, *_ in LIMITS:
        try:
            limit(config, key, skill)
        except ConfigError as exc:
            problems.append(exc)
    return problems


def persistent_problem(config: Mapping[str, Any], returns: Any, skill: str) -> ConfigError | None:
    """A persistent agent never returns, so it cannot have a `returns` schema."""
    if config.get("persistent") is True and returns is not None:
        return ConfigError(f"Skill '{skill}' sets model.persistent and `returns`; a persistent agent "
                           "never returns, so drop one of them.", skill=skill, setting=("model", "persistent"))
    return None


def model_settings(value: Any, skill: str) -> dict[str, Any]:
    """A skill's cascaded `model` metadata as the agent's config (absent: none)."""
    if value is None or value is False:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"Skill '{skill}' model must be a mapping of settings such as "
                          f"{{id: ..., maxTurns: 10}}, not {value!r:.60}.", skill=skill, setting=("model",))
    return dict(value)


def effective_config(config: Mapping[str, Any] | None, overrides: Mapping[str, Any],
                     environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The cascaded `model` config with `model.provider`, `--model`/AGENTAPPS_MODEL and `--replay`
    applied; `agent` is then the provider skill the run invokes.

    Precedence for the model id: `--model`, then AGENTAPPS_MODEL, then `model.id`, then the
    provider's default model.
    """
    env = os.environ if environ is None else environ
    out = dict(config or {})
    out["agent"] = provider_of(out)
    model = (overrides.get("model") or env.get("AGENTAPPS_MODEL") or out.get("id")
             or DEFAULT_MODELS.get(out["agent"], DEFAULT_MODEL))
    out["id"] = str(model)
    if overrides.get("replay"):
        out["agent"] = SCRIPTED_PROVIDER
        out["script"] = str(overrides["replay"])
    return out


def provider_of(config: Mapping[str, Any]) -> str:
    """The provider skill a `model` config selects: `provider` (a short name such as `openai`, or
    a skill name) wins over the older `agent` (a skill name); neither: `agent-bedrock`."""
    for key in ("provider", "agent"):
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            names = ", ".join(PROVIDERS)
            raise ConfigError(f"model.{key} must name a provider ({names}) or a provider skill, not "
                              f"{value!r}.", setting=("model", key))
        return PROVIDERS.get(value, value)
    return DEFAULT_PROVIDER


# what agent code may choose for a sub-agent (besides lowering limits): how the model answers,
# never where the call goes or who answers it (provider, model, region, endpoint, fallback, ...)
SUB_AGENT_CHOICES = frozenset({"temperature", "topP", "maxOutputTokens", "stopSequences", "contextEdit"})


def confine(config: Mapping[str, Any], parent: Mapping[str, Any], parent_limits: Limits) -> dict[str, Any]:
    """Config for a sub-agent started by agent code: everything but a few answer-shaping choices
    (SUB_AGENT_CHOICES) comes from the parent — provider, model, region, endpoint, fallback, script,
    guard, prices — it cannot loosen any of the parent's limits (defaults included), and it cannot
    be persistent. The model chose these args; it must not point its sub-agent's calls elsewhere."""
    out = {k: v for k, v in parent.items() if k not in LIMIT_KEYS and k != "persistent"}
    out.update({k: v for k, v in config.items() if k in SUB_AGENT_CHOICES or k in LIMIT_KEYS})
    for key, theirs in parent_limits.as_config().items():
        mine = out.get(key)
        if mine is None and theirs == math.inf and key in ("maxTokens", "maxCost"):
            continue  # no budget above: none to copy (an absent budget is unlimited)
        if mine == "Infinity":
            mine = math.inf
        if not isinstance(mine, (int, float)) or isinstance(mine, bool) or mine > theirs:
            out[key] = theirs
    return out
