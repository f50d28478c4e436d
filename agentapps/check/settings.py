"""Settings a run refuses: `model` (markdown skills), `session` and a main skill's `stores`, judged by
the run's own validators on the cascaded metadata, and reported at the file and line that write them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentapps.agent.validate import Names, model_problems
from agentapps.cascade.interface import interface_key
from agentapps.cascade.resolve import Cascaded
from agentapps.check.findings import Finding
from agentapps.check.scope import Scope, Site
from agentapps.context.origin import origin, value_at
from agentapps.errors import AgentAppsError, ConfigError
from agentapps.tools.locate import KeyLines
from agentapps.tools.lookup import EVERYTHING, Lookup

CODE = "invalid-setting"


@dataclass
class SettingsMemo:
    """One finding per place: a main skill's bad setting is reported once, not once per skill that
    inherits it (preferring the wording of the skill whose own file it is)."""

    found: dict[tuple[str, int, str, str], Finding] = field(default_factory=dict)
    lines: dict[Path, KeyLines] = field(default_factory=dict)
    schemas: dict[Any, Any] = field(default_factory=dict)  # validators of middleware params
    log: list[tuple[Finding, str, bool]] | None = None  # when a list: every add, for the check cache

    def lines_of(self, path: Path) -> KeyLines:
        if path not in self.lines:
            self.lines[path] = KeyLines(path)
        return self.lines[path]

    def add(self, finding: Finding, skill: str, own: bool) -> None:
        if self.log is not None:
            self.log.append((finding, skill, own))
        key = (finding.path, finding.line, finding.code, finding.message.replace(f"'{skill}'", "'*'"))
        if own or key not in self.found:
            self.found[key] = finding

    def findings(self) -> list[Finding]:
        return list(self.found.values())


def _names(scope: Scope) -> Names:
    def exists(name: str) -> bool:  # a declared MCP server whose tool list is not cached may offer it
        return name in scope.names() or any(name.startswith(f"{p}-") for p in scope.unlisted_servers())

    return Names(exists=exists, names=scope.names, tagged=lambda tag: scope.tags().get(tag, set()))


def _middleware_config(site: Site, meta: dict[str, Any], cache: dict[Any, Any]) -> list[ConfigError]:
    """A metadata key naming a middleware that declares params is that middleware's args in every
    call: the run validates them with the middleware's own params, and so does this."""
    from agentapps.schemas.validation import refused_config, validate

    scope, found = site.scope, list[ConfigError]()
    for key, value in meta.items():
        if key.startswith("$") or value is None or value is False or key not in scope.names():
            continue
        params = _middleware_params(scope, key, cache)
        if params is None:
            continue
        try:
            validate(dict(value) if isinstance(value, dict) else {}, params, cache, skill=key, where="params")
        except ConfigError:
            continue  # the middleware's own schema is broken: reported at its file
        except AgentAppsError as exc:
            refused = refused_config(site.tool.name, key, exc)
            found.append(ConfigError(refused.message, skill=site.tool.name, setting=(key,)))
    return found


def _middleware_params(scope: Scope, key: str, cache: dict[Any, Any]) -> dict[str, Any] | None:
    """The params of the middleware skill named `key` (None when it is not one that declares
    params), looked up once per scope: every skill's metadata repeats the same few keys."""
    memo = ("middleware-params", id(scope.lookup), key)
    if scope.lookup.reads is not None:  # found once per check: the check cache must still know
        scope.lookup.reads.add(key)
    if memo not in cache:
        cache[memo] = None
        try:
            middleware = scope.lookup.find(key)
            params = interface_key(middleware, scope.lookup, "params", scope.main)
        except AgentAppsError:
            return None  # reported at its own file
        if middleware.metadata.get("role") == "middleware" and middleware.params is not None:
            cache[memo] = params
    result: dict[str, Any] | None = cache[memo]
    return result


def problems(site: Site, cascaded: Cascaded, cache: dict[Any, Any] | None = None) -> list[ConfigError]:
    """Every setting of this skill the run would refuse."""
    from agentapps.stores.session_settings import settings_problems

    tool, scope, meta = site.tool, site.scope, cascaded.meta
    cache = {} if cache is None else cache
    found = settings_problems(meta.get("session"), skill=tool.name, file=tool.path)
    if tool.is_main:  # read from the main skill's own metadata, by every run of its project
        from agentapps.stores.config import problems as stores_problems

        found += stores_problems(tool.metadata.get("stores"), skill=tool.name)
    found += _middleware_config(site, meta, cache)
    found += _sandbox_problems(tool, meta)
    if tool.kind == "markdown" and meta.get("model") is not None:
        returns = interface_key(tool, scope.lookup, "returns", scope.main)
        found += model_problems(meta.get("model"), tool.name, returns=returns, names=_names(scope))
        found += _script_problem(tool, meta.get("model"), scope.lookup)
    return found


def _sandbox_problems(tool: Any, meta: dict[str, Any]) -> list[ConfigError]:
    """A main skill's `sandbox` mode and any skill's `network` grant (docs/sandbox.md)."""
    from agentapps.files.sandboxing import network_granted, sandbox_mode

    found: list[ConfigError] = []
    if tool.is_main:
        try:
            sandbox_mode(tool)
        except ConfigError as exc:
            found.append(exc)
    try:
        network_granted(tool, meta)
    except ConfigError as exc:
        found.append(exc)
    return found


def _script_problem(tool: Any, model: Any, lookup: Lookup) -> list[ConfigError]:
    """`model.script` (agent-scripted's turns) is read relative to the running skill's folder: the
    run stops with exit 2 when it is not there, so say so before."""
    script = model.get("script") if isinstance(model, dict) else None
    if not isinstance(script, str) or tool.path is None:
        return []
    if lookup.reads is not None:
        lookup.reads.add(EVERYTHING)  # a file beside the skill decides: not kept by the check cache
    if (tool.path.parent / script).is_file():
        return []
    return [ConfigError(f"Skill '{tool.name}' model.script '{script}' is not a file next to the skill "
                        f"({tool.path.parent / script}); the script is read relative to the skill's folder.",
                        skill=tool.name, file=tool.path, setting=("model", "script"))]


def settings(site: Site, cascaded: Cascaded, memo: SettingsMemo) -> None:
    """Add this skill's refused settings to `memo`, each at the file and line that writes it."""
    tool = site.tool
    for exc in problems(site, cascaded, memo.schemas):
        where = origin(cascaded.contributors, exc.setting, value_at(cascaded.meta, exc.setting),
                       memo.lines_of) if exc.setting else None
        if where is None:
            memo.add(site.at(["metadata", *exc.setting], "error", CODE, exc.message), tool.name, own=True)
            continue
        path, line = where
        own = tool.path is not None and path == tool.path
        memo.add(Finding(site.scope.shown(path), line, "error", CODE, exc.message), tool.name, own)


def merge_strategies(site: Site) -> list[Finding]:
    """Each `$merge` strategy a skill declares must be one the cascade knows (a run fails on it as
    soon as two levels set that key)."""
    from agentapps.cascade.merge import STRATEGIES, unknown_strategy

    declared = site.tool.metadata.get("$merge")
    if not isinstance(declared, dict):
        return []
    return [site.at(["metadata", "$merge", str(key)], "error", CODE,
                    f"Skill '{site.tool.name}' $merge.{key}: {unknown_strategy(strategy).message}")
            for key, strategy in declared.items() if strategy not in STRATEGIES]


def schedule(site: Site) -> list[Finding]:
    """`metadata.schedule` must be cron syntax `agentapps serve` can parse (it skips the skill otherwise)."""
    spec = site.tool.metadata.get("schedule")
    if not spec:
        return []
    from agentapps.core.cron import Cron

    text = spec.get("cron") if isinstance(spec, dict) else spec
    try:
        Cron.parse(str(text), skill=site.tool.name)
    except ConfigError as exc:
        keys = ["metadata", "schedule", "cron"] if isinstance(spec, dict) else ["metadata", "schedule"]
        return [site.at(keys, "error", CODE, exc.message)]
    return []
