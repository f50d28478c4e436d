"""Shell completion: `agentapps completion bash|zsh|fish` prints a script that asks
`agentapps __complete WORD...` for the candidates at the cursor: commands, their options and
subcommands, skill names, a skill's own params (`--text`, `--no-verbose`, an enum's values) and
files where an option takes a file.

`__complete` gets the words after `agentapps`, the last one being the word under the cursor
(possibly empty), and prints one candidate per line; a single line `__files__` asks the shell to
complete file names instead. It never prints an error: a broken project completes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

FILES = "__files__"
SHELLS = ("bash", "zsh", "fish")
SKILL_COMMANDS = ("describe", "which", "repl")  # (and `run`) commands whose first argument is a skill
FILE_METAVARS = ("FILE", "PATH", "DIR")

BASH = """# agentapps completion for bash: eval "$(agentapps completion bash)" in ~/.bashrc
_agentapps_complete() {
    local IFS=$'\\n' current="${COMP_WORDS[COMP_CWORD]}" out
    out=$(agentapps __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
    if [ "$out" = "__files__" ]; then
        COMPREPLY=($(compgen -f -- "$current"))
    else
        COMPREPLY=($(compgen -W "$out" -- "$current"))
    fi
}
complete -o filenames -F _agentapps_complete agentapps
"""

ZSH = """#compdef agentapps
# agentapps completion for zsh: eval "$(agentapps completion zsh)" in ~/.zshrc (after compinit)
_agentapps() {
    local -a items
    items=("${(@f)$(agentapps __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ "${items[1]}" == "__files__" ]]; then
        _files
    else
        compadd -- "${(@)items:#}"
    fi
}
compdef _agentapps agentapps
"""

FISH = """# agentapps completion for fish: agentapps completion fish > ~/.config/fish/completions/agentapps.fish
function __agentapps_complete
    set -l words (commandline -opc) (commandline -ct)
    set -e words[1]
    set -l out (agentapps __complete $words 2>/dev/null)
    if test "$out[1]" = "__files__"
        __fish_complete_path (commandline -ct)
    else
        printf '%s\\n' $out
    end
end
complete -c agentapps -f -a '(__agentapps_complete)'
"""


def script(shell: str) -> str:
    """The completion script for `shell` (a UsageError for another)."""
    from agentapps.errors import UsageError

    scripts = {"bash": BASH, "zsh": ZSH, "fish": FISH}
    if shell not in scripts:
        raise UsageError(f"agentapps completion takes one of {', '.join(SHELLS)}, got {shell!r}.")
    return scripts[shell]


def complete(words: list[str]) -> list[str]:
    """The candidates for the last of `words` (the words after `agentapps`)."""
    *before, current = words or [""]
    try:
        found = _complete(before, current)
    except Exception:  # noqa: BLE001 - completion never fails the shell: it completes nothing
        return []
    if found == [FILES]:
        return found
    return sorted({c for c in found if c.startswith(current)})


def _complete(before: list[str], current: str) -> list[str]:
    from agentapps.cli.commands import COMMANDS

    if not before:
        return [*COMMANDS, "--help", "--version"]
    command, rest = before[0], before[1:]
    if command == "run":
        return _run(rest, current)
    if command == "completion":
        return list(SHELLS) if not rest else []
    if command == "list":
        return _list(rest, current)
    return _typer_command(command, rest, current)


# -- run --------------------------------------------------------------------------------------------


def _run(rest: list[str], current: str) -> list[str]:
    from agentapps.cli.run_options import OPTIONS

    takes = {name: option.metavar for option in OPTIONS if option.metavar for name in option.names}
    i = 0
    while i < len(rest) and rest[i].startswith("-"):  # runner options come before the skill
        if rest[i] in takes:
            i += 1
        i += 1
    if i > len(rest):  # the word under the cursor is a runner option's value
        return _value(takes[rest[-1]])
    if i == len(rest):  # the skill's place
        if current.startswith("-"):
            return [name for option in OPTIONS for name in option.names]
        if current.startswith((".", "/", "~")):
            return [FILES]
        return _skill_names()
    return _params(rest[i], rest[i + 1:], current)


def _value(metavar: str | None) -> list[str]:
    return [FILES] if metavar in FILE_METAVARS else []


def _skill_names() -> list[str]:
    from agentapps.tools.catalog import list_tools

    rows, _ = list_tools(_lookup())
    return [row["name"] for row in rows]


def _params(skill: str, after: list[str], current: str) -> list[str]:
    """A skill's params as flags, or the values of the one being given."""
    from agentapps.cli.skillargs import kebab, property_for

    properties = _properties(skill)
    if after and after[-1].startswith("--") and "=" not in after[-1] and not current.startswith("-"):
        prop = property_for(after[-1][2:], properties)
        if prop is not None and _types(properties[prop]) != ["boolean"]:
            return _values(properties[prop])
    flags = ["--help", "--arg", "--arg-json"]
    for name, schema in properties.items():
        flags.append(f"--{kebab(name)}")
        if "boolean" in _types(schema):
            flags.append(f"--no-{kebab(name)}")
    return flags


def _properties(skill: str) -> dict[str, Any]:
    from agentapps.cascade.interface import params_of

    lookup = _lookup()
    tool = _tool(lookup, skill)
    params = params_of(tool, lookup) if tool is not None else None
    found = (params or {}).get("properties") if isinstance(params, dict) else None
    return found if isinstance(found, dict) else {}


def _tool(lookup: Any, ref: str) -> Any:
    if ref.endswith((".py", ".md")):
        from agentapps.tools.loader import load_file

        return load_file(Path(ref).absolute())
    return lookup.find(ref)


def _types(schema: Any) -> list[str]:
    found = schema.get("type") if isinstance(schema, dict) else None
    return [found] if isinstance(found, str) else [t for t in found or [] if isinstance(t, str)]


def _values(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    if isinstance(schema.get("enum"), list):
        return [str(v) for v in schema["enum"] if isinstance(v, (str, int, float))]
    if "boolean" in _types(schema):
        return ["true", "false"]
    return []


def _lookup() -> Any:
    from agentapps.boot import bootstrap

    return bootstrap(Path.cwd()).globals.lookup


def _list(rest: list[str], current: str) -> list[str]:
    from agentapps.cli.listing import OPTIONS

    takes = {name for spellings, _, metavar, _ in OPTIONS if metavar for name in spellings}
    if rest and rest[-1] in takes and not current.startswith("-"):
        return []  # a query or a tag: free text
    return [name for spellings, _, _, _ in OPTIONS for name in spellings if name.startswith("--")]


# -- the typer commands -------------------------------------------------------------------------------


def _typer_command(command: str, rest: list[str], current: str) -> list[str]:
    import typer.main

    from agentapps.cli.app import app

    group: Any = typer.main.get_command(app)
    found = group.commands.get(command)
    if found is None:
        return []
    while rest and hasattr(found, "commands") and rest[0] in found.commands:  # `runs show ...`
        found, rest = found.commands[rest[0]], rest[1:]
    options = {name: param for param in found.params if getattr(param, "opts", None)
               for name in [*param.opts, *param.secondary_opts]}
    if rest and rest[-1] in options and not options[rest[-1]].is_flag and not current.startswith("-"):
        return _value(str(options[rest[-1]].metavar or "").upper() or _file_like(options[rest[-1]]))
    if current.startswith("-"):
        return [*options, "--help"]
    if hasattr(found, "commands"):
        return list(found.commands)
    positional = [p for p in found.params if not getattr(p, "opts", None) or p.param_type_name == "argument"]
    if command in SKILL_COMMANDS and positional and not [w for w in rest if not w.startswith("-")]:
        return _skill_names()
    return [*options, "--help"] if not positional else []


def _file_like(param: Any) -> str | None:
    name = str(getattr(param, "name", "") or "")
    return "FILE" if any(word in name for word in ("file", "path", "dir", "script")) else None


USAGE = ("Usage: agentapps completion bash|zsh|fish\n\n"
         "Print the completion script for a shell. Install it with:\n"
         '  bash  eval "$(agentapps completion bash)"   (in ~/.bashrc)\n'
         '  zsh   eval "$(agentapps completion zsh)"    (in ~/.zshrc, after compinit)\n'
         "  fish  agentapps completion fish > ~/.config/fish/completions/agentapps.fish\n")


def command(args: list[str]) -> int:
    """`agentapps completion SHELL` prints a script; `agentapps __complete WORD...` the candidates
    at the cursor, one per line (what the scripts call)."""
    from agentapps.cli.boundary import fail
    from agentapps.errors import UsageError

    if args[0] == "__complete":
        found = complete(args[1:])
        if found:
            sys.stdout.write("\n".join(found) + "\n")
        return 0
    try:
        if args[1:] in (["-h"], ["--help"]):
            sys.stdout.write(USAGE)
            return 0
        if len(args) != 2:
            raise UsageError("agentapps completion takes one shell: bash, zsh or fish (see 'agentapps completion --help').")
        sys.stdout.write(script(args[1]))
        return 0
    except UsageError as exc:
        return fail(exc, as_json=False, verbose=False)
