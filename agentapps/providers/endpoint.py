"""Where an HTTP model API's calls go and which key they carry, from `model` settings and the
vendor's standard environment variables (`model.baseUrl`, else e.g. OPENAI_BASE_URL, else the
vendor's URL; the key from the variable `model.apiKeyEnv` names, default e.g. OPENAI_API_KEY).
`apiKeyEnv` can only name a variable ending in `_API_KEY`, so skill metadata cannot send another
secret of the environment to a server as its key; and a variable other than the vendor's own is
read only when the project named it (its main skill, or `--local`), so a skill cannot send the
user's key for one vendor to another.

A key goes only where the user or the project pointed the calls: the vendor's URL, the URL in the
vendor's variable (OPENAI_BASE_URL), or a `model.baseUrl` the project set (its main skill, or
`--local`). A skill that sets its own `baseUrl` gets its calls sent there without the key: else any
skill file (a copied folder, an installed package) could send the user's key to a server it names."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from agentapps.errors import ConfigError


class Trusted(NamedTuple):
    """What the project chose for its model calls (its main skill's `model`, after `--local`)."""

    urls: tuple[str, ...] = ()  # `model.baseUrl`
    key_envs: tuple[str, ...] = ()  # `model.apiKeyEnv`


NOTHING_TRUSTED = Trusted()


@dataclass(frozen=True)
class Endpoint:
    """One API root, the variable its key comes from, and the key (None: not set)."""

    base_url: str
    key_env: str
    key: str | None
    official: bool  # the vendor's own API (not a compatible server or gateway)
    withheld: str = ""  # a key is set but not sent: "url" (a skill's own baseUrl) or "key_env" (a skill's own apiKeyEnv)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], skill: str, *, default_url: str, url_env: str,
                    key_env: str, environ: Mapping[str, str] | None = None,
                    trusted: Trusted = NOTHING_TRUSTED) -> Endpoint:
        """`trusted`: what the project set (its main skill's `model.baseUrl` and `apiKeyEnv`, after
        `--local`); the vendor's URL, the one in `url_env` and the variable `key_env` are trusted as well."""
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
        chosen = {u.rstrip("/") for u in (*trusted.urls, env.get(url_env) or "", default_url) if isinstance(u, str) and u}
        key = env.get(named) or None
        official = url == default_url.rstrip("/")
        if url not in chosen:
            return cls(url, named, None, official, withheld="url" if key is not None else "")
        if named != key_env and named not in trusted.key_envs:
            return cls(url, named, None, official, withheld="key_env" if key is not None else "")
        return cls(url, named, key, official)

    def unsent_key(self, url_env: str) -> str:
        """Why the key was not sent, as a sentence to add to an error (empty when it was)."""
        if not self.withheld:
            return ""
        if self.withheld == "key_env":
            return (f" {self.key_env} was not sent: a skill's own model.apiKeyEnv names it, and a variable other than "
                    "the vendor's own is read only when the project names it (model.apiKeyEnv in its main skill, "
                    "or --local model.apiKeyEnv=NAME).")
        return (f" {self.key_env} was not sent: {self.base_url} is a skill's own model.baseUrl, and a key goes only "
                f"to a URL the project set (model.baseUrl in its main skill, --local model.baseUrl=URL, or {url_env}).")
