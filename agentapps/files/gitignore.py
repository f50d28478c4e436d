"""`.gitignore` rules, as git reads them, for walks over project files (file-search).

Supported: blank lines and `#` comments, `!` negation, a trailing `/` (folders only), a `/` at the
start or in the middle (anchored to the .gitignore's folder), `*`, `?`, `[...]` and `**`
(`**/x`, `x/**`, `a/**/b`), and backslash escapes. Each folder's `.gitignore` applies below it;
a later rule wins, and a file inside an ignored folder stays ignored (git never looks inside).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_RULES = 2000  # per file: a huge .gitignore must not make every match slow


@dataclass(frozen=True)
class Rule:
    """One .gitignore line as a regex, with its negation and directory-only flags."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(glob: str) -> str:
    """A gitignore glob (already stripped of anchoring slashes) as a regex over relative paths."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            end = glob.find("]", i + 2)
            if end < 0:
                out.append(re.escape("["))
                i += 1
                continue
            body = glob[i + 1:end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif glob[i] == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def parse(text: str) -> list[Rule]:
    rules: list[Rule] = []
    for raw in text.splitlines()[:MAX_RULES]:
        line = raw.rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        line = line[1:] if negate else line
        if line.startswith("\\"):
            line = line[1:] if line[1:2] in ("#", "!") else line
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        pattern = body if anchored else f"(?:.*/)?{body}"
        try:
            rules.append(Rule(re.compile(f"{pattern}\\Z", re.DOTALL), negate, dir_only))
        except re.error:
            continue  # git ignores what it cannot read, and so do we
    return rules


class Ignored:
    """The rules in force in one walk: each folder's `.gitignore` applies to paths below it."""

    def __init__(self) -> None:
        self._by_dir: dict[str, list[Rule]] = {}

    def add(self, rel_dir: str, text: str) -> None:
        rules = parse(text)
        if rules:
            self._by_dir[rel_dir] = rules

    def __call__(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (project-relative, `/`-separated) is ignored, its folders aside."""
        ignored = False
        for base, rules in self._by_dir.items():
            if base and not rel.startswith(base + "/"):
                continue
            tail = rel[len(base) + 1:] if base else rel
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(tail):
                    ignored = not rule.negate
        return ignored
