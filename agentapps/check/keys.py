"""Unknown top-level frontmatter keys: kept by the loader (Agent Skills compatibility), warned about here."""

from __future__ import annotations

from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.tools.names import FOLDER_SKILL_FILE, close_names, name_from_file

# Ours, plus the public Agent Skills keys; everything else belongs under `metadata`.
KNOWN_KEYS = ("name", "description", "allowed-tools", "metadata", "license", "compatibility")


def unknown_keys(site: Site) -> list[Finding]:
    found: list[Finding] = []
    for key in site.tool.frontmatter:
        if key in KNOWN_KEYS:
            continue
        close = close_names(str(key), KNOWN_KEYS, limit=1)
        fix = f"did you mean '{close[0]}'?" if close else "move it under `metadata`."
        message = f"Unknown top-level key '{key}' in the frontmatter: {fix}"
        found.append(site.at([str(key)], "warning", "unknown-key", message))
    return found


# Metadata keys with a meaning of their own (docs/skills.md, docs/pipeline.md).
METADATA_KEYS = ("params", "returns", "model", "session", "visibility", "role", "tags", "env", "paths",
                 "trust", "main", "events", "applies-to", "applies-if", "before", "after", "action-args", "mcp",
                 "stores", "webhook", "schedule", "sandbox", "network")


def named_like_a_key(site: Site) -> list[Finding]:
    """A skill named like a metadata key is never activated by that key unless it is middleware;
    say so, since its author may expect otherwise (and a reader may think it is)."""
    tool = site.tool
    if tool.name not in METADATA_KEYS or tool.metadata.get("role") == "middleware":
        return []
    if "directive" in tool.tags:  # `:env[...]` is served by `env`: the shared name is the point
        return []
    message = (f"Skill '{tool.name}' is named like the metadata key '{tool.name}'; the key does not "
               "activate it (only `role: middleware` skills join chains). Rename it to avoid confusion.")
    return [site.at(["name"], "warning", "metadata-key-name", message)]


def name_differs_from_file(site: Site) -> list[Finding]:
    """A skill is found by its frontmatter `name`, never by its file name: a file `a.skill.md` that
    declares `name: b` is a frequent surprise, and the Agent Skills format expects a folder's
    SKILL.md to carry the folder's name."""
    tool = site.tool
    if tool.path is None or "name" not in tool.frontmatter or tool.metadata.get("role") == "main":
        return []  # (a main skill is found by its role: its file is often named for its project)
    expected = name_from_file(tool.path.name, tool.path.parent.name)
    if tool.name == expected:
        return []
    where = f"its folder '{expected}'" if tool.path.name == FOLDER_SKILL_FILE else f"its file name '{expected}'"
    message = (f"Skill '{tool.name}' differs from {where}: it is found as '{tool.name}', and "
               f"'agentapps run {expected}' will not find it.")
    return [site.at(["name"], "warning", "name-differs-from-file", message)]


def applies_if(site: Site) -> list[Finding]:
    """`applies-if` names the schema a middleware needs the served skill to declare."""
    value = site.tool.metadata.get("applies-if")
    if value is None or value in ("params", "returns"):
        return []
    message = (f"Skill '{site.tool.name}' has `applies-if: {value!r}`; it takes 'params' or 'returns' (the "
               "middleware then serves only skills that declare that schema), and every call it would "
               "serve fails until it does.")
    return [site.at(["metadata", "applies-if"], "error", "bad-applies-if", message)]


def dollar_keys(site: Site) -> list[Finding]:
    """A `$` annotation agentapps does not implement (the reference's `$remove`, `$dynamic`,
    `$static`, `$self`, `$resolve`) or does not know: every run of the skill fails on it."""
    from agentapps.cascade.annotations import unsupported

    found = unsupported(site.tool.metadata)
    if found is None:
        return []
    keys, message = found
    return [site.at(["metadata", *keys], "error", "unsupported-annotation", f"Skill '{site.tool.name}': {message}")]


def misplaced_model_keys(site: Site) -> list[Finding]:
    """A limit or budget written straight under `metadata` (`maxSteps: 3`) instead of under
    `metadata.model`: the agent never reads it there, so the run goes on with the default."""
    from agentapps.agent.config import LIMIT_KEYS

    found: list[Finding] = []
    for key in site.tool.metadata:
        if key in (*LIMIT_KEYS, "budget", "pricing", "maxOutputTokens", "persistent"):
            message = (f"Skill '{site.tool.name}' sets `metadata.{key}`, which is ignored there: it is a model "
                       f"setting, so put it under `model` (model: {{{key}: ...}}).")
            found.append(site.at(["metadata", str(key)], "warning", "misplaced-model-key", message))
    return found
