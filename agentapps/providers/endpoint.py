"""Where an HTTP model API's calls go and which key they carry, from `model` settings and the
vendor's standard environment variables (`model.baseUrl`, else e.g. OPENAI_BASE_URL, else the
vendor's URL; the key from the variable `model.apiKeyEnv` names, default e.g. OPENAI_API_KEY).
`apiKeyEnv` can only name a variable ending in `_API_KEY`, so skill metadata cannot send another
secret of the environment to a server as its key.

A key goes only where the user or the project pointed the calls: the vendor's URL, the URL in the
vendor's variable (OPENAI_BASE_URL), or a `model.baseUrl` the project set (its main skill, or
`--local`). A skill that sets its own `baseUrl` gets its calls sent there without the key: else any
skill file (a copied folder, an installed package) could send the user's key to a server it names."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
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
    withheld: bool = False  # a key is set, but the URL is not one the user or the project chose

    @classmethod
    def from_config(cls, config: Mapping[str, Any], skill: str, *, default_url: str, url_env: str,
                    key_env: str, environ: Mapping[str, str] | None = None,
                    trusted: Collection[str] = ()) -> Endpoint:
        """`trusted`: the base URLs the project set (its main skill's `model.baseUrl`, after
        `--local`); the vendor's URL and the one in `url_env` are trusted as well."""
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
        chosen = {u.rstrip("/") for u in (*trusted, env.get(url_env) or "", default_url) if isinstance(u, str) and u}
        key = env.get(named) or None
        if url in chosen:
            return cls(url, named, key, url == default_url.rstrip("/"))
        return cls(url, named, None, False, withheld=key is not None)

    def unsent_key(self, url_env: str) -> str:
        """Why the key was not sent, as a sentence to add to an error (empty when it was)."""
        if not self.withheld:
            return ""
        return (f" {self.key_env} was not sent: {self.base_url} is a skill's own model.baseUrl, and a key goes only "
                f"to a URL the project set (model.baseUrl in its main skill, --local model.baseUrl=URL, or {url_env}).")
