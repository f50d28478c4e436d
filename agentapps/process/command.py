"""The one command line a `shell` call runs: what allowed-tools constraints match and what /bin/sh gets.

A call gives `command` (text for /bin/sh) or `argv` (a list of words). Both become one effective
command line, and that exact line is what `/bin/sh -c` runs, so a constraint on it binds the action:

- `argv` and plain commands (words, quotes and escapes only) become their words re-quoted with
  `shlex.join`: `git  "status"` and `["git", "status"]` are both `git status`;
- anything else the shell would interpret (`;`, `&&`, `|`, `$(...)`, `$VAR`, backquotes, globs,
  redirections, newlines, comments, `~`) stays a script and is shown as the line that runs it,
  `/bin/sh -c 'git status; id'`, so `git status*` never admits `git status; id`.
"""

from __future__ import annotations

import shlex
from typing import Any

from agentapps.errors import UsageError

SHELL = "/bin/sh"
_SPECIAL = frozenset("|&;<>()$`*?[]#~!{}^")


def _printable(text: str) -> bool:
    return all(ch.isprintable() or ch in " \t" for ch in text)


def _plain(command: str) -> bool:
    """Only words, blanks, quotes and backslash escapes, read the same by shlex and by sh."""
    if not _printable(command):  # newlines, carriage returns, control and odd space characters
        return False
    quote = ""
    i = 0
    while i < len(command):
        ch = command[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif quote == '"':
            if ch in "$`":
                return False
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            if i + 1 == len(command):  # a trailing backslash: shlex refuses it, sh reads it as itself
                return False
            i += 1
        elif ch in _SPECIAL:
            return False
        i += 1
    return not quote


def effective_command(command: Any, argv: Any) -> str:
    """The command line /bin/sh runs for these arguments (UsageError when they make none)."""
    if command is not None and argv is not None:
        raise UsageError("shell takes `command` (a line for /bin/sh) or `argv` (a list of words), not both.")
    if argv is not None:
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise UsageError("shell `argv` must be a non-empty list of strings.")
        words = argv
    elif isinstance(command, str) and command.strip():
        if _plain(command):
            words = shlex.split(command)
        else:
            words = [SHELL, "-c", command]
    else:
        raise UsageError("shell needs `command` (a line run by /bin/sh) or `argv` (a list of words).")
    if any("\x00" in w for w in words):
        raise UsageError("shell: a command cannot contain a NUL character.")
    return shlex.join(words)
