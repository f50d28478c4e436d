"""A shell command line split into its simple commands, each as plain words, by a real grammar.

The line is parsed with tree-sitter's bash grammar (imported on first use). Lists (`;`, `&&`,
`||`, newlines), pipelines, subshells, `{ ...; }` groups and `if`/`while` bodies are walked into;
every simple command becomes its words, with quotes and escapes removed as the shell would. What
cannot be read as plain words gets a `problem` instead: expansions (`$X`, `${X}`, `$(...)`,
backquotes, `<(...)`, arithmetic), globs, `~`, brace lists, ANSI-C quotes, variable assignments,
function definitions and the other compound commands, heredocs that expand, and redirections that
write outside the project. A line the grammar does not accept is a problem too.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MAX_COMMANDS = 256
_WALK = frozenset({"program", "list", "pipeline", "subshell", "compound_statement", "redirected_statement",
                   "negated_command", "if_statement", "elif_clause", "else_clause", "while_statement",
                   "do_group"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SYNTAX = {
    "variable_assignment": "it sets a shell variable",
    "variable_assignments": "it sets shell variables",
    "declaration_command": "it declares or exports a variable",
    "unset_command": "it unsets a variable or function",
    "function_definition": "it defines a shell function",
    "for_statement": "it has a for loop",
    "c_style_for_statement": "it has a for loop",
    "case_statement": "it has a case statement",
    "test_command": "it has a [ ] or [[ ]] test (write `test ...` instead)",
    "arithmetic_expansion": "it has arithmetic",
}
_EXPANSIONS = {
    "simple_expansion": "a variable expansion ($NAME)",
    "expansion": "a parameter expansion (${...})",
    "command_substitution": "a command substitution",
    "process_substitution": "a process substitution",
    "arithmetic_expansion": "an arithmetic expansion",
    "ansi_c_string": "an ANSI-C quoted string ($'...')",
    "translated_string": "a locale string ($\"...\")",
    "brace_expression": "a brace expansion",
}
_WRITES = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_BRACES = re.compile(r"\{[^{}\x00]*(,|\.\.)[^{}\x00]*\}")
_DELIMITER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|'[A-Za-z0-9_]+'|\"[A-Za-z0-9_]+\"|\\[A-Za-z0-9_]+")
_NO_GAP = re.compile("")
_BLANKS = re.compile(r"(?:[ \t]|\\\n)*")
_SPACES = re.compile(r"(?:[ \t\n]|\\\n)*")
_JOINED = re.compile(r"(?<![ \t])\\\n|\\[ \t]\\\n|\\\n[ \t]*\\")
_QUOTED = "\x00"  # stands for quoted text when looking for brace lists in a word's unquoted parts


@dataclass
class Simple:
    """One simple command: its words, and why it cannot be reduced to them (None: it can)."""

    words: list[str]
    problem: str | None = None
    shown: str | None = None  # the text shown for what is not a command (a problem, a redirection)


class Unreduced(Exception):
    """Internal: a word or construct that is not plain text."""


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def inside(path: str, root: str) -> bool:
    """Whether `path` (relative to `root`, the folder commands run in) stays in the project."""
    if path in _DEVICES:
        return True
    real = os.path.realpath(os.path.join(root, path))
    top = os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogateescape")


def _unescape(text: str, quoted: bool) -> tuple[str, str]:
    """The literal of a word (or of double-quoted text), and its unquoted special characters."""
    out: list[str] = []
    special: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            i += 2
            if nxt == "\n":
                continue
            if quoted and nxt not in '$`"\\':
                out.append("\\")
            out.append(nxt)
            special.append(_QUOTED)
            continue
        if not quoted and ch in " \t\n":  # /bin/sh ends a word there: the grammar did not
            raise Unreduced("it has words the shell grammar joins where /bin/sh does not")
        out.append(ch)
        special.append(_QUOTED if quoted and ch not in "$`" else ch)  # both expand in double quotes
        i += 1
    return "".join(out), "".join(special)


def _plain_children(node: Any) -> list[Any]:
    """A word's parts, refusing a bare token among them (`$` at a word's end is one) and text
    between them that no part covers: text the grammar skips would be dropped from the words."""
    for child in node.children:
        if not child.is_named:
            raise Unreduced(f"it has shell syntax that is not reduced ({_text(child)!r})")
    _covered(node, _NO_GAP)
    return list(node.children)


def _covered(node: Any, gap: re.Pattern[str], apart: bool = False) -> None:
    """Refuse text between a node's children (or at its edges) that is more than `gap` allows:
    the grammar reads `'x'\\ b` as two words where /bin/sh reads one, skipping the `\\ `. With
    `apart`, two words must also have a blank between them (`'x'\\-y` is one word to /bin/sh)."""
    text = bytes(node.text)
    at = node.start_byte
    previous: Any = None
    for child in [*node.children, None]:
        end = child.start_byte if child is not None else node.end_byte
        between = text[at - node.start_byte:end - node.start_byte].decode("utf-8", "replace")
        if not gap.fullmatch(between):
            raise Unreduced("it has text the shell grammar skips")
        if apart and not between and previous is not None and child is not None and \
                previous.type not in _REDIRECTS and child.type not in _REDIRECTS:
            raise Unreduced("it has words the shell grammar splits where /bin/sh does not")
        if child is not None:
            at, previous = child.end_byte, child


def _word(node: Any) -> str:
    """The literal a word node stands for; Unreduced when the shell would expand it."""
    literal, bare = _word_parts(node)
    if "$" in bare or "`" in bare:  # also when the grammar did not see an expansion there
        raise Unreduced("it has a `$` or a backquote the shell would expand")
    if any(ch in bare for ch in "*?[") or bare.startswith("~") or _BRACES.search(bare):
        raise Unreduced("it has a glob, `~` or brace pattern the shell would expand")
    return literal


def _word_parts(node: Any) -> tuple[str, str]:
    kind = node.type
    if kind in _EXPANSIONS:
        raise Unreduced(f"it has {_EXPANSIONS[kind]}")
    if not node.is_named:
        raise Unreduced(f"it has shell syntax that is not reduced ({_text(node)!r})")
    if kind in ("word", "number"):
        return _unescape(_text(node), quoted=False)
    if kind == "raw_string":
        inner = _text(node)[1:-1]
        return inner, _QUOTED * len(inner)
    if kind == "string":
        bad = next((c for c in node.named_children if c.type != "string_content"), None)
        if bad is not None:
            raise Unreduced(f"it has {_EXPANSIONS.get(bad.type, 'an expansion')} in double quotes")
        return _unescape(_text(node)[1:-1], quoted=True)
    if kind == "concatenation":
        pieces = [_word_parts(c) for c in _plain_children(node)]
        return "".join(p[0] for p in pieces), "".join(p[1] for p in pieces)
    raise Unreduced(f"it has shell syntax that is not a plain word ({kind})")


def _redirect(node: Any, root: str) -> Simple | None:
    """A redirection to or from a file as an action of its own (`> out.txt`); None for one that
    names no file (`2>&1`, `>/dev/null`, a literal here-document). Unreduced when it expands
    anything or writes outside the project."""
    if node.type == "heredoc_redirect":  # read as text: the grammar misses `$` after a `<<-` tab
        parts = {c.type: _text(c) for c in node.named_children}
        delimiter = parts.get("heredoc_start", "")
        if not _DELIMITER.fullmatch(delimiter) or parts.get("heredoc_end") != re.sub(r"['\"\\]", "", delimiter):
            raise Unreduced("it has a here-document that is not understood")
        if delimiter.isidentifier() and ("$" in _text(node) or "`" in _text(node)):
            raise Unreduced("it has a here-document that expands")
        return None
    if node.type == "herestring_redirect":
        for child in node.named_children:
            _word(child)
        return None
    ops = [_text(c) for c in node.children if not c.is_named]
    op = ops[0] if ops else ">"
    target = node.child_by_field_name("destination")
    if target is None:
        return None
    if (target.type == "number" or _text(target) == "-") and op in (">&", "<&"):
        return None  # `2>&1`, `>&-`: a file descriptor, not a file
    path = _word(target)
    if op in _WRITES and not inside(path, root):
        raise Unreduced("it redirects output to a file outside the project")
    fd = "".join(_text(c) for c in node.named_children if c.type == "file_descriptor")
    return None if path in _DEVICES else Simple([], None, f"{fd}{op} {shlex.quote(path)}")


def _command(node: Any, root: str) -> list[Simple]:
    words: list[str] = []
    files: list[Simple] = []
    try:
        _covered(node, _BLANKS, apart=True)
        for child in node.children:
            if child.type == "variable_assignment":
                raise Unreduced("it sets environment variables for the command")
            if child.type in _REDIRECTS:
                files.extend(f for f in [_redirect(child, root)] if f is not None)
            elif child.type == "command_name":
                words.extend(_word(c) for c in _plain_children(child))
            elif child.type != "comment":
                words.append(_word(child))
    except Unreduced as exc:
        return [Simple([], str(exc), _text(node))]
    return [Simple(words), *files]


def _walk(node: Any, root: str) -> Iterator[Simple]:
    kind = node.type
    if kind == "command":
        yield from _command(node, root)
    elif kind in _WALK:
        try:
            _covered(node, _SPACES)
        except Unreduced as exc:
            yield Simple([], str(exc), _text(node))
            return
        for child in node.named_children:
            if child.type in _REDIRECTS:
                try:
                    found = _redirect(child, root)
                except Unreduced as exc:
                    found = Simple([], str(exc), _text(child))
                if found is not None:
                    yield found
            elif child.type != "comment":
                yield from _walk(child, root)
    elif kind != "comment":
        why = _SYNTAX.get(kind) or (f"it has {_EXPANSIONS[kind]}" if kind in _EXPANSIONS else
                                    f"it has shell syntax that is not reduced ({kind})")
        yield Simple([], why, _text(node))


def split(line: str, root: str) -> list[Simple]:
    """The simple commands of `line`, run by /bin/sh in `root`, in the order they appear, each
    followed by the files it is redirected to or from (as entries whose `shown` is `> path`)."""
    if any(not ch.isprintable() and ch not in " \t\n" for ch in line):
        # the grammar reads a carriage return as a blank, /bin/sh as part of a word
        return [Simple([], "it has control characters", line)]
    if _JOINED.search(line):  # /bin/sh joins `pu\<newline>sh` into `push`; the grammar splits it
        return [Simple([], "a backslash-newline joins two words", line)]
    tree = _parser().parse(line.encode("utf-8", "surrogateescape"))
    if tree.root_node.has_error:
        return [Simple([], "it does not parse as a shell command line", line)]
    found = list(_walk(tree.root_node, root))
    if len(found) > MAX_COMMANDS:
        return [Simple([], f"it has more than {MAX_COMMANDS} commands", line)]
    return found
