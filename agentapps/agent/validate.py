"""Every `model` setting a run refuses, each tried on its own: a run stops at the first before any
model call, `agentapps check` reports them all. Each problem is the run's own ConfigError (its
`setting` names the key), so the two can never disagree."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentapps.agent.config import (
    ANTHROPIC_PROVIDER,
    DEFAULT_PROVIDER,
    OPENAI_PROVIDER,
    PROVIDERS,
    effective_config,
    limit,
    limit_problems,
    model_settings,
    persistent_problem,
)
from agentapps.agent.period_budget import caps_of
from agentapps.errors import AgentAppsError, ConfigError, SkillNotFoundError
from agentapps.tools.names import did_you_mean, ref_kind

PROVIDER_TAG = "agent-provider"  # the contract skill carries it too, and is not a provider
NAMED_SKILLS = ("agent", "guard", "contextFull")  # model keys that name a skill the run calls


@dataclass(frozen=True)
class Names:
    """How settings that name skills are resolved: the run's lookup, or check's scope."""

    exists: Callable[[str], bool]
    names: Callable[[], Iterable[str]]
    tagged: Callable[[str], Iterable[str]]


def lookup_names(lookup: Any) -> Names:
    """Names for a run: its own search path (listing happens only to suggest a close name)."""
    def exists(name: str) -> bool:
        try:
            lookup.find(name)
        except SkillNotFoundError:
            return False
        except AgentAppsError:
            return True  # it exists but does not load: the call reports that at its own file
        return True

    def tagged(tag: str) -> list[str]:
        return [t.name for t in lookup.list_all()[0] if tag in t.tags]

    return Names(exists, lookup.all_names, tagged)


def _named(config: Mapping[str, Any], skill: str, names: Names) -> list[ConfigError]:
    problems: list[ConfigError] = []
    for key in NAMED_SKILLS:
        name = config.get(key)
        if not isinstance(name, str) or not name or ref_kind(name) != "name" or names.exists(name):
            continue  # paths and URIs resolve at the call, like any ref
        said, named = key, name
        if key == "agent" and isinstance(config.get("provider"), str):
            said, named = "provider", config["provider"]  # `agent` was resolved from `provider`
        pool = [n for n in names.tagged(PROVIDER_TAG) if n != PROVIDER_TAG] if key == "agent" else names.names()
        hint = did_you_mean(name, pool) or (f" Providers: {', '.join(sorted(pool))}." if key == "agent" else "")
        if said == "provider":
            hint = f" Providers: {', '.join(PROVIDERS)}, or a provider skill ({', '.join(sorted(pool))})."
        problems.append(ConfigError(f"Skill '{skill}' model.{said} names '{named}', which is not a skill on the "
                                    f"search path.{hint}", skill=skill, setting=("model", said)))
    return problems


def _tried(problems: list[ConfigError], check: Callable[[], object]) -> None:
    try:
        check()
    except ConfigError as exc:
        problems.append(exc)


def model_problems(config: Any, skill: str, *, returns: Any, names: Names,
                   overrides: Mapping[str, Any] | None = None,
                   environ: Mapping[str, str] | None = None) -> list[ConfigError]:
    """Every problem of a skill's cascaded `model` settings, as the agent run would meet them.

    `overrides`/`environ` are the run's (`--model`, `--replay`, AGENTAPPS_MODEL); check passes none
    and judges the files alone."""
    from agentapps.agent import bedrock_config, context_edit, models, usage

    try:
        raw = model_settings(config, skill)
        effective = effective_config(raw, overrides or {}, environ if environ is not None else {})
    except ConfigError as exc:
        return [exc]  # no provider: nothing else can be judged
    problems = limit_problems(effective, skill)
    found = persistent_problem(effective, returns, skill)
    if found is not None:
        problems.append(found)
    problems += _named(effective, skill, names)
    model_id = str(effective["id"])
    _tried(problems, lambda: context_edit.settings(effective, model_id, skill))
    _tried(problems, lambda: caps_of(effective.get("budget"), skill))
    ids = [model_id]
    if effective["agent"] in (DEFAULT_PROVIDER, OPENAI_PROVIDER, ANTHROPIC_PROVIDER):
        openai = effective["agent"] == OPENAI_PROVIDER
        _tried(problems, lambda: bedrock_config.attempts(effective, skill))
        _tried(problems, lambda: bedrock_config.inference(effective, skill, 2 if openai else 1))
        if effective["agent"] != DEFAULT_PROVIDER:
            from agentapps.agent import anthropic_provider, openai_provider

            where = openai_provider if openai else anthropic_provider
            _tried(problems, lambda: where.endpoint(effective, skill))
            _tried(problems, lambda: openai_provider.read_timeout(effective, skill))
            if openai:
                _tried(problems, lambda: openai_provider.api_of(effective, skill))
        if not openai:
            _tried(problems, lambda: models.cache_mode(effective.get("cache"), model_id, skill))
        try:
            ids = bedrock_config.model_ids(effective, skill)
        except ConfigError as exc:
            problems.append(exc)
    before = len(problems)
    for each in ids:
        try:
            usage.price_for(each, effective.get("pricing"), skill)
        except ConfigError as exc:
            problems.append(exc)
    if len(problems) == before:
        _tried(problems, lambda: _priced(effective, model_id, skill))
    return list({(exc.setting, exc.message): exc for exc in problems}.values())


def _priced(config: Mapping[str, Any], model_id: str, skill: str) -> None:
    """A cost budget needs a price for the model (the run refuses its first turn otherwise)."""
    from agentapps.agent.usage import price_for, unpriced

    budget = limit(config, "maxCost", skill)
    if (budget < math.inf or caps_of(config.get("budget"), skill)) and price_for(model_id, config.get("pricing"), skill) is None:
        raise unpriced(model_id, skill)
