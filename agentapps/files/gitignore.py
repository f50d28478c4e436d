"""`.gitignore` rules, as git reads them, for walks over project files (file-search).

Each `.gitignore` is read by the `pathspec` library (`GitIgnoreSpec`: comments, `!` negation, a
trailing `/` for folders, anchoring `/`, `*`, `?`, `[...]`, `**` and backslash escapes, with git's
own precedence). A differential test checks it against `git check-ignore` itself. pathspec runs its
patterns on RE2 (google-re2, already a dependency) when it is installed, so matching takes time
linear in the path whatever a cloned repository's `.gitignore` holds; the old hand-written
translation used Python's backtracking `re`.

What stays here is the walk's part: each folder's `.gitignore` applies to the paths below it, a
deeper file's rules win over its parents', and a file inside an ignored folder stays ignored
because the walk never enters the folder (as git never looks inside).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

MAX_RULES = 2000  # per file: a huge .gitignore must not make every match slow


def _spec(lines: list[str]) -> GitIgnoreSpec | None:
    """The rules of `lines`, or None when pathspec cannot read one of them."""
    import re

    import re2
    from pathspec import GitIgnoreSpec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pathspec compiles `[[` with `re`, which warns: the rule's, not ours
        try:
            return GitIgnoreSpec.from_lines(lines)
        except (ValueError, re.error, re2.error):
            return None


def parse(text: str) -> GitIgnoreSpec:
    """One `.gitignore` file's rules (its first MAX_RULES lines). A line pathspec cannot read
    (`!` alone, a trailing `\\`, `[z-a]`, a POSIX class RE2 refuses) is left out, and only it: git
    too ignores a rule it cannot read rather than the whole file."""
    lines = text.splitlines()[:MAX_RULES]
    spec = _spec(lines)
    if spec is None:
        spec = _spec([line for line in lines if _spec([line]) is not None])
    assert spec is not None  # every line left compiles on its own
    return spec


class Ignored:
    """The rules in force in one walk: each folder's `.gitignore` applies to paths below it."""

    def __init__(self) -> None:
        self._by_dir: dict[str, GitIgnoreSpec] = {}

    def add(self, rel_dir: str, text: str) -> None:
        """Add the `.gitignore` of `rel_dir` (project-relative; `""` for the root). Parents first."""
        spec = parse(text)
        if len(spec):
            self._by_dir[rel_dir] = spec

    def __call__(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (project-relative, `/`-separated) is ignored, its folders aside."""
        ignored = False
        for base, spec in self._by_dir.items():
            if base and not rel.startswith(base + "/"):
                continue
            tail = rel[len(base) + 1:] if base else rel
            decided = spec.check_file(tail + "/" if is_dir else tail).include
            if decided is not None:
                ignored = decided
        return ignored
