"""`params` and `returns`: valid JSON Schemas (draft 2020-12) whose `pattern`s RE2 can run."""

from __future__ import annotations

import json
from typing import Any

from agentapps.check.findings import Finding
from agentapps.check.scope import Site
from agentapps.schemas.plain import supports, unknown_keywords
from agentapps.schemas.validation import unusable_patterns
from agentapps.tools.locate import Key

WHERE = ("params", "returns")


Problem = tuple[str, list[Key]]  # a metaschema message and the path inside the schema it is about


def schema_problem(schema: dict[str, Any], memo: dict[str, Problem | None]) -> Problem | None:
    """(message, path inside the schema) of the first metaschema violation, or None when valid.

    Plain schemas take the runtime's own fast path (`schemas.plain.supports` accepts only well-formed
    ones), so check agrees with run; the rest go through jsonschema's metaschema, memoised by text.
    """
    if supports(schema):
        return None
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in memo:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(schema)
            memo[key] = None
        except SchemaError as exc:
            memo[key] = (str(exc.message), list(exc.path))
    return memo[key]


def schemas(site: Site, memo: dict[str, Problem | None]) -> list[Finding]:
    tool, found = site.tool, list[Finding]()
    for where in WHERE:
        schema = tool.metadata.get(where)
        if not isinstance(schema, dict):
            continue  # the loader refuses anything else
        base: list[Key] = ["metadata", where]
        problem = schema_problem(schema, memo)
        if problem is not None:
            message, path = problem
            found.append(site.at(base + path, "error", "invalid-schema",
                                 f"Skill '{tool.name}' has an invalid {where} schema: {message}."))
        for where_in in unknown_keywords(schema):
            keys: list[Key] = [part for part in where_in.split("/") if part]
            message = (f"Skill '{tool.name}' {where} schema has '{keys[-1]}', which is not a JSON Schema "
                       f"keyword (at {where_in}); it is ignored. A typo, or move it into a `description`?")
            found.append(site.at(base + keys, "warning", "unknown-keyword", message))
        for pattern, why, path_ in unusable_patterns(schema):
            message = (f"Skill '{tool.name}' {where} schema has a 'pattern' that cannot be matched in "
                       f"linear time ({pattern[:40]!r}): {why}. Rewrite it with plain RE2 syntax.")
            found.append(site.at(base + list(path_), "error", "unsafe-pattern", message))
    return found
