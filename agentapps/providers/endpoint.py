"""Where an HTTP model API's calls go and which key they carry, from `model` settings and the
vendor's standard environment variables (`model.baseUrl`, else e.g. OPENAI_BASE_URL, else the
vendor's URL; the key from the variable `model.apiKeyEnv` names, default e.g. OPENAI_API_KEY).
`apiKeyEnv` can only name a variable ending in `_API_KEY`, so skill metadata cannot send another
secret of the environment to a server as its key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentapps.errors import ConfigError


@dataclass(frozen=True)
class Endpoint:
    """One API root, the variable its key comes from, and the key (None: not set)."""

    base_url: str
    key_env: str
    key: str | None
    official: bool  # the vendor's own API (not a compatible server or gateway)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], skill: str, *, default_url: str, url_env: str,
                    key_env: str, environ: Mapping[str, str] | None = None) -> Endpoint:
        env = os.environ if environ is None else environ
        base, named = config.get("baseUrl"), config.get("apiKeyEnv", key_env)
        if base is not None and (not isinstance(base, str) or not base.startswith(("http://", "https://"))):
            raise ConfigError(f"Skill '{skill}' model.baseUrl must be an http(s) URL such as "
                              f"{default_url}, not {base!r}.", skill=skill, setting=("model", "baseUrl"))
        if not isinstance(named, str) or not named.replace("_", "").isalnum() or not named.endswith("_API_KEY"):
            # the key goes to the server as a bearer token: a skill must not be able to send any
            # other secret of the environment (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY) to a server
            raise ConfigError(f"Skill '{skill}' model.apiKeyEnv must name an environment variable ending in "
                              f"_API_KEY (such as {key_env}), not {named!r}.", skill=skill,
                              setting=("model", "apiKeyEnv"))
        url = (base or env.get(url_env) or default_url).rstrip("/")
        return cls(url, named, env.get(named) or None, url == default_url.rstrip("/"))
