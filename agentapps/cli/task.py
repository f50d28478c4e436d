"""A folder skill's task on the `run` command line: the text after the skill's name, `--input TEXT`,
`--task TEXT`, or piped stdin (agentapps.tools.task says which skills take one).

`agentapps run pdf "fill in form.pdf from data.json"` and `agentapps run pdf fill in form.pdf`
(words joined by one space; after `--` every word is text) give the same task. The task is given
once: two of the text, `--input`, `--task` (or `--arg task=...`, `--arg-json`, `--args-file`) is
an error. Piped stdin is the task when none is given on the command line, and is added below the
task (after a blank line) when one is, as text pasted under a request: it is never dropped.
"""

from __future__ import annotations

import sys
from typing import Any

from agentapps.errors import ArgsError
from agentapps.tools.task import TASK

TAKES_VALUE = frozenset({"task", "input", "arg", "arg-json", "args-file"})


def split_task(tokens: list[str], skill: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The tokens after a task-taking skill's name: those left for the params parser, and the
    task as given, as (where, text) pairs, in order."""
    rest: list[str] = []
    given: list[tuple[str, str]] = []
    words: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--":
            words += tokens[i:]
            break
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        flag, eq, inline = token[2:].partition("=") if token.startswith("--") else (token, "", "")
        if flag not in TAKES_VALUE:
            rest.append(token)  # the params parser says what is wrong with it
            continue
        value = inline if eq else None
        if value is None:
            if i >= len(tokens):
                raise ArgsError(f"--{flag} needs a value (skill '{skill}').", skill=skill)
            value, i = tokens[i], i + 1
        if flag in ("task", "input"):
            given.append((f"--{flag}", value))
        else:
            rest += [f"--{flag}", value]
    if words:
        given.insert(0, ("the text after its name", " ".join(words)))
    return rest, given


def settle_task(args: dict[str, Any], given: list[tuple[str, Any]], piped: str | None, skill: str) -> None:
    """Put the task in `args`: `given` is every (where, value) the command line gave it, refused
    when more than one; `piped`, the text on stdin, is the task or is added below it."""
    if len(given) > 1:
        raise ArgsError(f"Skill '{skill}' got its task twice ({given[0][0]} and {given[1][0]}); give it once.",
                        skill=skill)
    value = given[0][1] if given else None
    if piped:
        value = f"{value}\n\n{piped}" if isinstance(value, str) and value else piped
    if value is not None:
        args[TASK] = value  # not a string: validation names it


def no_task_text(tokens: list[str], params: dict[str, Any] | None, skill: str) -> None:
    """Refuse text right after the name of a skill that takes no task, saying what it takes."""
    if not tokens or tokens[0].startswith("-"):
        return
    shown = repr(tokens[0][:40])
    if params is None:
        raise ArgsError(f"Skill '{skill}' takes no arguments (it declares no params), so it takes no task text "
                        f"like {shown}; only a folder skill (NAME/SKILL.md) without params takes one.", skill=skill)
    from agentapps.cli.skillargs import kebab

    props = params.get("properties") or {}
    flags = f" ({', '.join('--' + kebab(p) for p in list(props)[:6])})" if props else ""
    raise ArgsError(f"Skill '{skill}' declares params{flags}, so it takes no task text like {shown}: give "
                    f"each param as --name value (see 'agentapps run {skill} --help').", skill=skill)


def piped_text(used_stdin: bool) -> str | None:
    """The text piped to stdin (capped at the args limit), None at a terminal or when read already."""
    if used_stdin:
        return None
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return None
    except (OSError, ValueError):
        return None
    from agentapps.cli.inputs import read_capped

    return read_capped("-", "stdin") or None
