"""A simple command's words reduced to the program that really runs: wrappers unwrapped, the
program named as PATH finds it, git's global options folded, output options checked.

- `env`, `command`, `exec`, `nice`, `nohup`, `timeout`, `xargs`, `sudo`, `doas`, `setsid`, `stdbuf`,
  `ionice`, `chrt`, `taskset`, `flock` and `builtin` are unwrapped with their options (and the one
  word `timeout`, `chrt`, `taskset` and `flock` take before the command); `sh|bash|dash|zsh|ksh -c 'literal'` is parsed again,
  recursively. An option we do not know, `env NAME=value`, `env -C`, `sudo -i`, `xargs` (it adds
  words read from its input) and the like are problems: the words shown are still the unwrapped ones.
- `/usr/bin/git` is `git` when its folder is a system folder or on PATH; `./git` stays `./git`.
- `git -C dir -c k=v --no-pager push` is `git push`. A `-c` (or `--config-env`) key that is not
  known to be inert (`alias.*`, `core.pager`, `core.sshCommand`, ...: they can run commands),
  `--exec-path=DIR`, and `-C`/`--git-dir`/`--work-tree` outside the project are problems.
- An output option that writes outside the project (`git diff --output=/x`, `--output-directory`,
  `sort -o`, `curl -o`, `tee`) is a problem.
- `eval`, `source`/`.`, `alias`, `trap` and `hash` run or redefine commands from text: problems.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from agentapps.tools.shellparse import Simple, inside, split

MAX_DEPTH = 8
SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
SHELL_LONG = frozenset({"--norc", "--noprofile", "--posix", "--login", "--noediting", "--restricted", "--verbose",
                        "--debugger", "--dump-strings", "--dump-po-strings", "--protected", "--pretty-print"})
SHELL_LONG_VALUED = frozenset({"--rcfile", "--init-file"})
OPAQUE = {
    "eval": "eval runs text as a command",
    "source": "source runs a script in the shell itself",
    ".": "'.' runs a script in the shell itself",
    "alias": "alias redefines what a command name runs",
    "trap": "trap runs text as a command later",
    "hash": "hash changes where a command name is found",
    "enable": "enable changes which builtins exist",
    "coproc": "coproc runs a command in the background of the shell",
}
# wrapper: (flags, options that take a value, options that are problems)
WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {
    "env": (frozenset({"-i", "-", "-0", "-v", "--ignore-environment", "--null", "--debug"}),
            frozenset({"-u", "--unset"}), frozenset({"-C", "--chdir", "-S", "--split-string", "-P"})),
    "command": (frozenset({"-p"}), frozenset(), frozenset()),
    "exec": (frozenset({"-c", "-l"}), frozenset({"-a"}), frozenset()),
    "nice": (frozenset(), frozenset({"-n", "--adjustment"}), frozenset()),
    "nohup": (frozenset(), frozenset(), frozenset()),
    "time": (frozenset({"-p", "-v", "-a", "-q", "--portability", "--verbose", "--append", "--quiet"}),
             frozenset({"-f", "--format"}), frozenset({"-o", "--output"})),
    "builtin": (frozenset(), frozenset(), frozenset()),
    "setsid": (frozenset({"-c", "-f", "-w", "--ctty", "--fork", "--wait"}), frozenset(), frozenset()),
    "stdbuf": (frozenset(), frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), frozenset()),
    "timeout": (frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
                frozenset({"-s", "--signal", "-k", "--kill-after"}), frozenset()),
    "xargs": (frozenset({"-0", "--null", "-o", "--open-tty", "-p", "--interactive", "-r", "--no-run-if-empty",
                         "-t", "--verbose", "-x", "--exit"}),
              frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-L", "--max-lines", "-n", "--max-args",
                         "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"}),
              frozenset({"-I", "-i", "--replace", "-e", "--eof", "-l"})),
    # the wrappers below take one word before the command (a priority, a CPU mask, a lock file)
    "ionice": (frozenset({"-t", "--ignore"}), frozenset({"-c", "--class", "-n", "--classdata"}),
               frozenset({"-p", "--pid", "-P", "--pgid", "-u", "--uid"})),
    "chrt": (frozenset({"-a", "--all-tasks", "-b", "--batch", "-d", "--deadline", "-f", "--fifo", "-i", "--idle",
                        "-o", "--other", "-r", "--rr", "-R", "--reset-on-fork", "-v", "--verbose"}),
             frozenset({"-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"}),
             frozenset({"-p", "--pid"})),
    "taskset": (frozenset({"-a", "--all-tasks", "-c", "--cpu-list"}), frozenset(), frozenset({"-p", "--pid"})),
    "flock": (frozenset({"-s", "--shared", "-x", "-e", "--exclusive", "-u", "--unlock", "-n", "--nb", "--nonblock",
                         "-o", "--close", "-F", "--no-fork", "--verbose"}),
              frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}),
              frozenset({"-c", "--command"})),
    "doas": (frozenset({"-n"}), frozenset({"-u"}), frozenset({"-s", "-C", "-L"})),
    "sudo": (frozenset({"-A", "--askpass", "-b", "--background", "-E", "--preserve-env", "-H", "--set-home",
                        "-k", "--reset-timestamp", "-n", "--non-interactive", "-P", "--preserve-groups",
                        "-S", "--stdin", "-B", "--bell"}),
             frozenset({"-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt", "-r", "--role",
                        "-t", "--type", "-T", "--command-timeout", "-U", "--other-user", "-C", "--close-from"}),
             frozenset({"-D", "--chdir", "-i", "--login", "-s", "--shell", "-e", "--edit", "-R", "--chroot"})),
}
GIT_FLAGS = frozenset({"--no-pager", "-p", "--paginate", "-P", "--bare", "--no-replace-objects", "--no-lazy-fetch",
                       "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
                       "--no-optional-locks", "--no-advice", "--html-path", "--man-path", "--info-path",
                       "--exec-path", "--version", "--help", "-v", "-h"})
GIT_VALUED = frozenset({"--namespace", "--list-cmds", "--super-prefix", "--attr-source"})
GIT_PATHS = frozenset({"-C", "--git-dir", "--work-tree"})
GIT_INERT = re.compile(r"(user\.(name|email)|color\..*|advice\..*|core\.quotepath|init\.defaultbranch|column\..*)")
# git subcommands' options (or sub-subcommands) that run a command given on the line
GIT_RUNS = {
    "fetch": ("--upload-pack",), "pull": ("--upload-pack",), "ls-remote": ("--upload-pack",),
    "clone": ("--upload-pack", "-u", "--template"), "init": ("--template",),
    "push": ("--receive-pack", "--exec"), "send-pack": ("--receive-pack", "--exec"),
    "fetch-pack": ("--upload-pack", "--exec"), "archive": ("--exec",), "rebase": ("--exec", "-x"),
    "difftool": ("--extcmd", "-x"), "grep": ("--open-files-in-pager", "-O"),
    "filter-branch": ("--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter",
                      "--commit-filter", "--tag-name-filter"),
    "submodule": ("foreach",), "bisect": ("run",), "config": ("--edit", "-e"),
}
OUTPUT_LONG = ("--output", "--output-file", "--output-document", "--output-directory", "--log-file")
OUTPUT_SHORT = {"sort": "-o", "curl": "-o", "wget": "-O", "format-patch": "-o", "archive": "-o"}
FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def program(word: str) -> str:
    """The program a command word names, as PATH would find it: `/usr/bin/git` is `git`."""
    if "/" not in word or not word.startswith("/"):
        return word
    path = "/" + os.path.normpath(word).lstrip("/")  # POSIX keeps a leading `//`; Linux reads it as `/`
    folder, name = os.path.split(path)
    on_path = {"/" + os.path.normpath(p).lstrip("/") for p in os.environ.get("PATH", "").split(os.pathsep)
               if p.startswith("/")}
    return name if name and (folder in SYSTEM_DIRS or folder in on_path) else path


def _options(name: str, words: list[str]) -> tuple[list[str], str | None]:
    """Skip a wrapper's options; the wrapped command's words, and a problem when one is unknown."""
    flags, valued, bad = WRAPPERS[name]
    i = 1
    problem: str | None = None
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-" and name != "env":
            break
        opt = word.split("=", 1)[0] if word.startswith("--") else word[:2]
        if name == "nice" and re.fullmatch(r"-\d+", word):
            i += 1
        elif opt in bad or word in bad:
            problem = problem or f"'{name} {opt}' changes what or where the command runs"
            i += 1 + (opt in ("-C", "--chdir", "-D", "-S", "-P", "-o", "--output") and "=" not in word
                      and len(word) == len(opt))
        elif word in flags or (not word.startswith("--") and len(word) > 2 and
                               all(f"-{c}" in flags for c in word[1:])):
            i += 1
        elif opt in valued:
            attached = "=" in word if word.startswith("--") else len(word) > 2
            i += 1 if attached else 2
        else:
            return words[i:], f"'{name}' option '{opt}' is not understood"
    return words[i:], problem


def _git(words: list[str], root: str) -> tuple[list[str], str | None]:
    """`git` with its global options folded away (and the problems they raise)."""
    i = 1
    problem: str | None = None
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        opt, eq, value = word.partition("=")
        if word in GIT_FLAGS:
            i += 1
            continue
        if opt in ("-c", "--config-env") or word.startswith("-c"):
            if opt == "--config-env":
                setting = value
            elif word == "-c":
                setting = words[i + 1] if i + 1 < len(words) else ""
                i += 1
            else:
                setting = word[2:]
            key = setting.split("=", 1)[0].lower()
            if key.startswith("alias."):
                problem = problem or f"'git -c {key}' defines a git alias, which can run any command"
            elif not GIT_INERT.fullmatch(key):
                problem = problem or f"'git -c {key}' sets configuration that may run commands"
            i += 1
            continue
        if opt == "--exec-path" and eq:
            problem = problem or "'git --exec-path=...' changes where git finds its commands"
            i += 1
            continue
        if opt in GIT_PATHS or opt in GIT_VALUED:
            if not eq:
                value = words[i + 1] if i + 1 < len(words) else ""
                i += 1
            if opt in GIT_PATHS and not inside(value, root):
                problem = problem or f"'git {opt}' points git outside the project"
            i += 1
            continue
        return words, f"git option '{opt}' is not understood"
    return ["git", *words[i:]], problem or _git_runs(words[i:])


def _git_runs(words: list[str]) -> str | None:
    """A problem when a git subcommand is given a command to run, or `git config` sets a value."""
    if not words:
        return None
    sub, rest = words[0], words[1:]
    for word in rest:
        for opt in GIT_RUNS.get(sub, ()):
            if word == opt or word.startswith(opt + "=") or (opt.startswith("-") and len(opt) == 2
                                                             and word.startswith(opt)):
                return f"'git {sub} {opt}' runs a command given on the line"
    if sub == "config" and _git_config_sets(rest):
        return "'git config' changes what later git commands run"
    return None


def _git_config_sets(rest: list[str]) -> bool:
    """Whether `git config ARGS` writes configuration (reading it, `--get` and `--list`, is fine)."""
    writes = ("--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section")
    if rest[:1] and rest[0] in ("set", "unset", "rename-section", "remove-section", "edit") or \
            any(w in writes for w in rest):
        return True
    if rest[:1] and rest[0] in ("get", "list"):
        return False
    reads = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color",
             "--get-colorbool")
    if any(w in reads for w in rest):
        return False
    return len([w for w in rest if not w.startswith("-")]) != 1


def _writes_outside(words: list[str], root: str) -> str | None:
    """A problem when an output option (or `tee`) of these words writes outside the project."""
    name = words[1] if words[0] == "git" and len(words) > 1 else words[0]
    short = OUTPUT_SHORT.get(name)
    shown = f"git {name}" if words[0] == "git" else name
    targets: list[tuple[str, str]] = []
    for k, word in enumerate(words[1:], start=1):
        nxt = words[k + 1] if k + 1 < len(words) else ""
        opt, eq, value = word.partition("=")
        if opt in OUTPUT_LONG:
            targets.append((opt, value if eq else nxt))
        elif short is not None and word.startswith(short):
            targets.append((short, word[len(short):] or nxt))
        elif words[0] == "tee" and not word.startswith("-"):
            targets.append(("", word))
    for opt, path in targets:
        if path and not inside(path, root):
            return f"'{shown}{' ' if opt else ''}{opt}' writes to a file outside the project"
    return None


def reduce(words: list[str], root: str, depth: int = 0) -> list[Simple]:
    """The simple commands these words really run (several for `sh -c 'a; b'`)."""
    problem: str | None = None
    while words:
        words = [program(words[0]), *words[1:]]
        name = words[0]
        if name in OPAQUE:
            return [Simple(words, OPAQUE[name])]
        if name == "command" and any(w in ("-v", "-V") for w in words[1:2]):
            break  # `command -v git` only says where git is
        if name in WRAPPERS:
            inner, why = _options(name, words)
            if name in ("timeout", "chrt", "taskset", "flock") and inner:
                inner = inner[1:]  # the duration, the priority, the CPU mask, the lock file
            while name in ("env", "sudo") and inner and _NAME.match(inner[0]):
                why = why or f"'{name}' sets environment variables for the command"
                inner = inner[1:]
            if name == "xargs":
                why = why or "xargs adds words read from its input to the command"
                inner = inner or ["echo"]
            problem = problem or why
            if not inner:
                break
            words = inner
            continue
        if name in SHELLS and len(words) > 1:
            script, why = _script(words)
            problem = problem or why
            if script is not None:
                if depth >= MAX_DEPTH:
                    return [Simple(words, f"it nests shells deeper than {MAX_DEPTH}")]
                found = [one for s in split(script, root) for one in
                         (reduce(s.words, root, depth + 1) if s.shown is None else [s])]
                if problem is not None:
                    found = [replace(s, problem=s.problem or problem) for s in found] or [Simple(words, problem)]
                return found
            problem = problem or f"'{name}' runs a script the rules cannot see (a file or its input)"
        if name in SHELLS and len(words) == 1:
            problem = problem or f"'{name}' runs the script it reads from its input"
        if name == "find" and any(w in FIND_RUNS for w in words[1:]):
            problem = problem or "'find -exec' runs commands"
        if name == "git":
            words, why = _git(words, root)
            problem = problem or why
        break
    problem = problem or (_writes_outside(words, root) if words else None)
    return [Simple(words, problem)] if words else []


def _script(words: list[str]) -> tuple[str | None, str | None]:
    """The literal script of `sh [options] -c [options] SCRIPT`, and a problem: None for the script
    when the shell reads a file or its input instead. The script is the first word after every
    option, wherever `-c` stood among them."""
    i = 1
    command = False
    while i < len(words) and words[i][:1] in ("-", "+"):
        word = words[i]
        i += 1
        if word in ("-", "--"):
            break
        if word.startswith("--"):
            if word in SHELL_LONG_VALUED:
                i += 1
            elif word not in SHELL_LONG:
                return None, f"'{words[0]}' option '{word}' is not understood"
        elif word in ("-o", "+o", "-O", "+O"):
            i += 1
        else:
            command = command or "c" in word[1:]
    if not command:
        return None, None
    return (words[i], None) if i < len(words) else (None, None)
