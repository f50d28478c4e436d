"""`agentapps list`: the listing itself, and a fast path that reads argv without typer (33 ms of
imports, half the command). Anything the fast parser does not fully understand (--help, a typo, a
missing value) goes to typer, so help and usage errors read the same as every other command's."""

from __future__ import annotations

import sys
from typing import Any

from agentapps.cli import render

_FLAGS = {"--all": "all", "-a": "all", "--json": "json"}
_VALUED = {"--query": "query", "-Q": "query", "--tag": "tag", "-t": "tag"}


def parse_fast(tokens: list[str]) -> dict[str, Any] | None:
    """The options of `list`, or None when typer should parse them (help, errors, anything unusual)."""
    out: dict[str, Any] = {"query": None, "tag": [], "all": False, "json": False}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name, eq, value = token.partition("=")
        if token in _FLAGS:
            out[_FLAGS[token]] = True
        elif name in _VALUED and name.startswith("--") and eq:
            _put(out, _VALUED[name], value)
        elif token in _VALUED and i + 1 < len(tokens):
            i += 1
            _put(out, _VALUED[token], tokens[i])
        else:
            return None
        i += 1
    return out


def _put(out: dict[str, Any], key: str, value: str) -> None:
    if key == "tag":
        out["tag"].append(value)
    else:
        out[key] = value


def list_skills(query: str | None, tags: list[str], include_hidden: bool, as_json: bool) -> None:
    from agentapps.cli.app_invoke import invoke_command_skill

    args: dict[str, Any] = {"includeHidden": include_hidden}
    if query:
        args["query"] = query
    if tags:
        args["tags"] = list(tags)
    items, root = invoke_command_skill("skill-list", args)  # a thin wrapper: the skill does the listing
    _, problems = root.globals.lookup.list_summaries()  # the index is warm: this only reads it again
    for problem in problems:
        render.warn(str(problem))
    if as_json:
        render.emit_json({"skills": items, "problems": [str(p) for p in problems]})
        return
    width = max((len(i["name"]) for i in items), default=4)
    for item in items:
        sys.stdout.write(f"{item['name']:<{width}}  {item['source']:<8}  {item['description']}\n".rstrip() + "\n")
