"""Local overrides of the main skill's metadata for one run: `--local`, `--local-json`, `AGENTAPPS_LOCAL_*`.

A CI job changes configuration without editing files. Each override sets one path in the
metadata of the project's main skill (the authority), as if that file said so:

- `--local KEY.PATH=VALUE` (text) and `--local-json KEY.PATH=JSON` on `agentapps run`;
- `AGENTAPPS_LOCAL_<PATH>=VALUE` in the environment, `__` between path segments
  (`AGENTAPPS_LOCAL_MODEL__REGION=eu-west-1`, `AGENTAPPS_LOCAL_WEBHOOK__ROUTES__0__SECRET=...`).

Precedence, lowest first: the main skill's file, then the environment variables (in name order,
so a parent path is set before its children), then the command-line options in the order given.
A skill's own metadata still wins over the authority, as it would over an edit of the main file;
the main skill itself, when it is what runs, gets the overrides.

Paths: a numeric segment indexes a list (the length appends); a missing key on the way is
created, as a list when the next segment is a number (which must then be 0), else as an object. Text values take the type of the value they replace (number, boolean); a new key's text
that is a plain JSON number or `true`/`false` becomes one (`model.maxTurns=50` is a number even
when the file has no `maxTurns`); anything else, and any secret-looking key, stays text.
An environment segment matches an existing key ignoring case, `_` and `-` (`MAX_TURNS` is
`maxTurns`), else becomes camelCase. Interface keys (`params`, `returns`, `role`, `tags`,
`visibility`, `main`) and `$` annotations cannot be overridden: they are not configuration.

A typo in a path's first segment (`modle.id`) is refused with a did-you-mean (cascade.local_keys
has the rule); any other new key is the project's own and is set. Below the first segment every
path is free-form (provider options, routes, a skill's own settings).

The seed's spelling `AGENT_APPS_LOCAL_*` is read beside `AGENTAPPS_LOCAL_*`; when both name the
same path, ours wins (it is applied after).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agentapps.cascade import LOCAL_ENV_PREFIX, SEED_LOCAL_ENV_PREFIX
from agentapps.cascade.local_keys import refuse_typo
from agentapps.errors import UsageError
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.runstate import Internals

ENV_PREFIX = LOCAL_ENV_PREFIX
SEED_ENV_PREFIX = SEED_LOCAL_ENV_PREFIX
REFUSED = frozenset({"params", "returns", "role", "tags", "visibility", "main", "allowed-tools"})
# a key naming a credential, anywhere in it (`aws.secretkey`, `accessTokens`, `GITHUB_TOKEN`), and the
# headers that carry one (`Authorization`, `Proxy-Authorization`, `X-Api-Key`, `Cookie`) ...
SECRET_WORDS = re.compile(r"secret|token|password|passwd|passphrase|credential|private|cookie|bearer"
                          r"|auth(?!or(?!i[sz]))|(?:api|access|app|signing|license|encryption|master|subscription)[_-]?keys?",
                          re.IGNORECASE)
# ... except a token count (`maxTokens`, `max_output_tokens`, `contextTokens`), which is a number
TOKEN_COUNT = re.compile(r"(max|min|num|total|input|output|context|prompt|completion)[_-]?tokens?(?![a-z])",
                         re.IGNORECASE)


def names_a_secret(path: str) -> bool:
    """Whether a key path names a credential (its value is then redacted, and kept as text)."""
    return bool(SECRET_WORDS.search(TOKEN_COUNT.sub(" ", path)))


@dataclass(frozen=True)
class Override:
    """One override: where it came from (`--local`, `--local-json`, or the variable's name), the
    path as written, its parsed value, and whether the value is text to coerce."""

    source: str
    path: str
    value: Any
    text: bool
    env: bool = False

    @property
    def secret(self) -> bool:
        """Whether the value holds a credential (it is then redacted wherever shown): its path names
        one, or, for --local-json, a key inside the value does (`headers={"Authorization": ...}`)."""
        return bool(self.secret_values())

    def secret_values(self) -> list[str]:
        """The credentials in the value as text: all of it when the path names one, else each
        value inside a JSON value whose key names one."""
        found: list[str] = []
        _secret_leaves(self.value, self.path, names_a_secret(self.path), found)
        return found

    def shown(self) -> dict[str, Any]:
        value = "[redacted]" if names_a_secret(self.path) else _hidden(self.value)
        return {"path": self.path, "value": value, "source": self.source}


def _secret_leaves(value: Any, path: str, secret: bool, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _secret_leaves(item, f"{path}.{key}", secret or names_a_secret(str(key)), found)
    elif isinstance(value, list):
        for item in value:
            _secret_leaves(item, path, secret, found)
    elif secret and value is not None:
        found.append(value if isinstance(value, str) else json.dumps(value))


def _hidden(value: Any) -> Any:
    """A JSON value with whatever sits under a key naming a credential replaced by "[redacted]"."""
    if isinstance(value, dict):
        return {k: "[redacted]" if names_a_secret(str(k)) else _hidden(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(item) for item in value]
    return value


def parse_option(raw: str, *, as_json: bool) -> Override:
    """`KEY.PATH=VALUE` (or `=JSON` for --local-json) as given on the command line."""
    flag = "--local-json" if as_json else "--local"
    path, eq, text = raw.partition("=")
    path = path.strip()
    if not eq or not path:
        raise UsageError(f"{flag} expects KEY.PATH={'JSON' if as_json else 'VALUE'}, got {raw[:80]!r}.")
    _segments(path, f"{flag} {path}")
    if not as_json:
        return Override(flag, path, text, True)
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{flag} {path}: the value is not JSON ({exc}).") from None
    return Override(flag, path, value, False)


def from_environment(environ: Mapping[str, str]) -> list[Override]:
    """The `AGENT_APPS_LOCAL_*` then the `AGENTAPPS_LOCAL_*` variables, each group parents before
    children, indices in numeric order (so ours win over the seed's spelling of the same path)."""
    return [*_prefixed(environ, SEED_ENV_PREFIX), *_prefixed(environ, ENV_PREFIX)]


def _prefixed(environ: Mapping[str, str], prefix: str) -> list[Override]:
    found = []
    for name in sorted(k for k in environ if k.startswith(prefix)):
        rest = name[len(prefix):]
        parts = rest.split("__")
        if not rest or any(not p for p in parts):
            raise UsageError(f"Environment variable {name}: name a metadata path after {prefix}, "
                             "with `__` between segments (AGENTAPPS_LOCAL_MODEL__REGION).")
        found.append(Override(name, ".".join(parts), environ[name], True, env=True))
    return sorted(found, key=_order)


def _check_head(override: Override, present: Iterable[str]) -> None:
    known = {str(k) for k in present} - REFUSED
    refuse_typo(override.path.split(".")[0], _where(override), override.env, known)


def _order(override: Override) -> list[tuple[int, int, str]]:
    """Path order, segment by segment, with list indices as numbers (`__2` before `__10`): a parent
    comes before its children, and a list's items one index after another, each with its own
    children (`X__0__A` before `X__1`)."""
    return [(0, int(p), "") if _index(p) else (1, 0, p) for p in override.path.split(".")]


def _where(override: Override) -> str:
    """How an error names the override: the variable's name, or the option and its path."""
    return override.source if override.env else f"{override.source} {override.path}"


def _segments(path: str, where: str) -> list[str]:
    parts = path.split(".")
    if any(not p for p in parts):
        raise UsageError(f"{where}: empty path segment.")
    head = parts[0]
    if head.lower() in REFUSED or any(p.startswith("$") for p in parts):
        raise UsageError(f"{where}: `{head.lower() if head.lower() in REFUSED else path}` is not "
                         "configuration (interface keys and $ annotations cannot be overridden).")
    return parts


def _index(raw: str) -> bool:
    """Whether a path segment is a list index: ASCII digits, no sign, no leading zero."""
    return re.fullmatch(r"0|[1-9][0-9]*", raw) is not None


def _numeric(raw: str) -> bool:
    """Whether a path segment is written as a whole number (`9`, `-1`, `007`)."""
    return re.fullmatch(r"-?[0-9]+", raw) is not None


def _folded(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def _camel(segment: str) -> str:
    words = [w for w in segment.lower().split("_") if w]
    return words[0] + "".join(w.capitalize() for w in words[1:]) if words else segment


def _key(container: dict[str, Any], segment: str, env: bool) -> str:
    if not env or segment in container:
        return segment
    for key in container:
        if _folded(key) == _folded(segment):
            return key
    return _camel(segment)


def _coerce(current: Any, text: str, where: str) -> Any:
    if isinstance(current, bool):
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise UsageError(f"{where}: expects true or false (it replaces a boolean), got {text[:80]!r}.")
    if isinstance(current, (int, float)):
        try:
            number = float(text)
        except ValueError:
            raise UsageError(f"{where}: expects a number (it replaces one), got {text[:80]!r}.") from None
        if not math.isfinite(number):
            raise UsageError(f"{where}: expects a finite number, got {text[:80]!r}.")
        return int(number) if isinstance(current, int) and number.is_integer() else number
    if isinstance(current, (dict, list)):
        kind = "an object" if isinstance(current, dict) else "a list"
        raise UsageError(f"{where}: replaces {kind}; give JSON with --local-json, or set its "
                         "fields one by one.")
    return text


def _literal(text: str, key: str) -> Any:
    """A new key's value: a number or boolean when the text is exactly one as JSON writes it
    (`50`, `0.5`, `true`; not `050` or `1e3`), else the text."""
    if names_a_secret(key):
        return text
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?(0|[1-9][0-9]{0,17})(\.[0-9]+)?", text):
        return float(text) if "." in text else int(text)
    return text


def _step(node: Any, raw: str, override: Override, walked: list[str], where: str
          ) -> tuple[Any, Any]:
    """The key or index `raw` names in `node`, and the value there now (None when absent)."""
    if isinstance(node, list):
        if not _index(raw) or int(raw) > len(node):
            raise UsageError(f"{where}: `{'.'.join(walked) or 'metadata'}` is a list of "
                             f"{len(node)}; `{raw}` is not an index in it (0 to {len(node)}).")
        index = int(raw)
        return index, node[index] if index < len(node) else None
    if isinstance(node, dict):
        key = _key(node, raw, override.env)
        return key, node.get(key)
    raise UsageError(f"{where}: `{'.'.join(walked)}` is {type(node).__name__} "
                     f"{json.dumps(node)[:40]}, not an object or list, so it has no `{raw}`.")


def _put(node: Any, index: Any, value: Any) -> None:
    if isinstance(node, list) and index == len(node):
        node.append(value)
    else:
        node[index] = value


def _created(following: str, walked: list[str], where: str) -> list[Any] | dict[str, Any]:
    """The container made for a missing key: a list when the next segment is a number (which must
    then be 0, the only index a new list has), else an object."""
    if not _numeric(following):
        return {}
    if following != "0":
        raise UsageError(f"{where}: `{'.'.join(walked)}` does not exist; `{following}` would index a "
                         "new list, which can only start at 0.")
    return []


def _set(meta: dict[str, Any], override: Override) -> str:
    """Apply one override; returns the path it set, in the metadata's own spelling."""
    where = _where(override)
    parts = _segments(override.path, where)
    node: Any = meta
    walked: list[str] = []
    for raw, following in itertools.pairwise(parts):
        index, current = _step(node, raw, override, walked, where)
        walked.append(str(index))
        if current is None:
            current = _created(following, walked, where)
            _put(node, index, current)
        node = current
    index, current = _step(node, parts[-1], override, walked, where)
    walked.append(str(index))
    value = override.value
    if override.text:
        value = _coerce(current, value, where) if current is not None else _literal(value, ".".join(walked))
    _put(node, index, value)
    return ".".join(walked)


def apply(main: ToolDef | None, overrides: Sequence[Override]) -> tuple[ToolDef | None, list[Override]]:
    """A copy of `main` with the overrides applied (UsageError for a bad path or value), and the
    overrides with their paths as the metadata spells them."""
    if not overrides:
        return main, []
    if main is None:
        names = ", ".join(dict.fromkeys(o.source for o in overrides))
        raise UsageError(f"{names}: overrides the main skill's metadata, but this project has no main "
                         "skill (role: main); create one with 'agentapps init', or set the value in "
                         "the skill itself.")
    frontmatter = copy.deepcopy(main.frontmatter)
    meta = frontmatter.setdefault("metadata", {})
    present = list(meta)
    for override in overrides:
        _check_head(override, present)
    applied = [replace(o, path=_set(meta, o)) for o in overrides]
    return main.with_frontmatter(frontmatter), applied


def collect(options: Iterable[Override], environ: Mapping[str, str]) -> list[Override]:
    """Every override of this run in the order they apply: environment, then the options."""
    return [*from_environment(environ), *options]


def register_secrets(internals: Internals, overrides: Iterable[Override]) -> None:
    """Redact credential-like override values (a path naming a secret, token, password, key,
    authorization header), and each such value inside a JSON value."""
    for override in overrides:
        name = override.source.lstrip("-").replace("-", "_")
        if names_a_secret(override.path) and not isinstance(override.value, str):
            internals.redactor.register(name, json.dumps(override.value))
        for value in override.secret_values():
            internals.redactor.register(name, value)
