"""`agentapps list`: its one parser (options, help and usage errors), and the listing.

`list` parses its own argv, as `run` does: typer's imports would double the command's start-up
(measured 2026-11-27: 136-139 ms through typer against 72-75 ms here, `python -c pass` 15 ms;
the target is <= 8x, benchmarks/cli_speed.py). The parser follows click's rules and wording, so
`list` reads like every other command: short flags combine (`-aQ text`, `-Qtext`), a long option
takes `--opt=value`, `--` ends the options, `-h` wins over everything but a usage error.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from agentapps.cli import render
from agentapps.cli.commands import COMMANDS
from agentapps.errors import UsageError

# (spellings, dest, metavar or None for a flag, help): the parser and the help come from this table
OPTIONS: tuple[tuple[tuple[str, ...], str, str | None, str], ...] = (
    (("-Q", "--query"), "query", "<str>", "Text to find in names and descriptions."),
    (("-t", "--tag"), "tag", "<str>", "Only skills with this tag (repeatable: all must match)."),
    (("-a", "--all"), "all", None, "Include hidden skills and the pipeline's middleware."),
    (("--json",), "json", None, "Print JSON."),
    (("-h", "--help"), "help", None, "Show this message and exit."),
)
_BY_NAME = {name: option for option in OPTIONS for name in option[0]}
_LONG = [name for option in OPTIONS for name in option[0] if name.startswith("--")]
_SEE = "(see 'agentapps list --help')"


def usage() -> str:
    """The text of `agentapps list --help`."""
    import textwrap

    spelled = [", ".join(names) + (f" {metavar}" if metavar else "") for names, _, metavar, _ in OPTIONS]
    width = max(len(s) for s in spelled)
    rows = [f"  {s:<{width}}  {option[3]}" for s, option in zip(spelled, OPTIONS, strict=True)]
    about = textwrap.fill(COMMANDS["list"], width=78, initial_indent="  ", subsequent_indent="  ")
    return f"Usage: agentapps list [OPTIONS]\n\n{about}\n\nOptions:\n" + "\n".join(rows) + "\n"


def parse(tokens: list[str]) -> dict[str, Any] | None:
    """The options of `list` ({query, tag, all, json}), or None when help was asked for."""
    out: dict[str, Any] = {"query": None, "tag": [], "all": False, "json": False, "help": False}
    rest, extra = list(tokens), []
    while rest:
        token = rest.pop(0)
        if token == "--":
            extra += rest
            break
        if token.startswith("-") and token != "-":
            _option(token, rest, out)
        else:
            extra.append(token)
    if out.pop("help"):  # after the whole line parsed (a bad option still fails), before extras
        return None
    if extra:
        raise UsageError(f"Got unexpected extra argument(s) ({' '.join(_shown(a) for a in extra)}) {_SEE}")
    return out


def _option(token: str, rest: list[str], out: dict[str, Any]) -> None:
    name, eq, value = token.partition("=")
    option = _BY_NAME.get(name) if name.startswith("--") else None
    if option is not None:
        if eq:
            if option[2] is None:
                raise UsageError(f"Option {name!r} does not take a value. {_SEE}")
            rest.insert(0, value)
        _take(option, name, rest, out)
    elif token.startswith("--"):
        import difflib

        close = sorted(difflib.get_close_matches(name, _LONG))
        hint = f" (Possible options: {', '.join(close)})" if close else ""
        raise UsageError(f"No such option: {_shown(name)}{hint} {_SEE}")
    else:  # short flags, combined: -aQ text, -Qtext
        for i, letter in enumerate(token[1:], start=2):
            short = _BY_NAME.get(f"-{letter}")
            if short is None:
                raise UsageError(f"No such option: {_shown('-' + letter)} {_SEE}")
            if short[2] is not None and i < len(token):
                rest.insert(0, token[i:])
                _take(short, f"-{letter}", rest, out)
                return
            _take(short, f"-{letter}", rest, out)


def _take(option: tuple[tuple[str, ...], str, str | None, str], name: str, rest: list[str],
          out: dict[str, Any]) -> None:
    dest = option[1]
    if option[2] is None:
        out[dest] = True
    elif not rest:
        raise UsageError(f"Option {name!r} requires an argument. {_SEE}")
    elif dest == "tag":
        out["tag"].append(rest.pop(0))
    else:
        out[dest] = rest.pop(0)


def _shown(text: str) -> str:
    """Untrusted argv in a message, without terminal control characters."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m[0]):02x}", text)


def list_command(tokens: list[str]) -> int:
    opts = parse(tokens)
    if opts is None:
        sys.stdout.write(usage())
        return 0
    list_skills(opts["query"], opts["tag"], opts["all"], opts["json"])
    return 0


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
    room = _room(width + 12)  # name, two spaces, source (8), two spaces
    lines = [f"{item['name']:<{width}}  {item['source']:<8}  "
             f"{item['description'] if room is None else fit(item['description'], room)}".rstrip() for item in items]
    if lines:  # one write: 50 000 skills are one call, not 50 000
        sys.stdout.write("\n".join(lines) + "\n")


def _room(used: int) -> int | None:
    """The columns left for a description on a terminal; None when stdout is not one (a pipe keeps
    every description whole, for grep)."""
    import shutil

    if not sys.stdout.isatty():
        return None
    return max(shutil.get_terminal_size().columns - used, 20)


def fit(text: str, room: int) -> str:
    """`text` on one line of at most `room` columns: cut at the last space that fits, never inside a
    word, and marked with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= room:
        return text
    cut = text.rfind(" ", 0, room)
    head = text[:cut] if cut > room // 2 else text[: room - 1]  # one huge word: cut it after all
    return head.rstrip(" ,;:") + "…"
