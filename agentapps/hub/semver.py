"""Semantic versions and npm-style ranges: `^1.2.3`, `~1.2`, `>=1 <2`, `1.x`, `*`, `1.2.3 - 2`,
`a || b`, exact versions.

npm's rules, not PEP 440's: a caret allows changes that do not modify the left-most non-zero
part (`^0.2.3` is `>=0.2.3 <0.3.0`), a tilde allows patch changes (minor ones when only the major
is given), a missing part is a wildcard, and a pre-release version satisfies a range only when one
of the comparators of the same set names a pre-release of the same `major.minor.patch`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentapps.errors import PackageError

_VERSION = re.compile(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                      r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$")
_PARTIAL = re.compile(r"^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?"
                      r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$")
_COMPARATOR = re.compile(r"^(\^|~>?|>=|<=|>|<|=)?\s*(.*)$")


@dataclass(frozen=True, order=False)
class Version:
    """A semantic version; ordered by precedence (build metadata is ignored)."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _VERSION.match(text.strip())
        if match is None:
            raise PackageError(f"'{text}' is not a semantic version (MAJOR.MINOR.PATCH).")
        pre = tuple(int(p) if p.isdigit() else p for p in match.group(4).split(".")) if match.group(4) else ()
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre)

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        # a release sorts after its pre-releases; numeric identifiers sort before alphanumeric ones
        ids = tuple((0, p) if isinstance(p, int) else (1, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, ids)

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Version) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: Version) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: Version) -> bool:
        return self._key() >= other._key()

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core + ("-" + ".".join(str(p) for p in self.pre) if self.pre else "")


Comparator = tuple[str, Version]  # (">=", 1.2.3)


def _partial(text: str, spec: str) -> tuple[int | None, int | None, int | None, tuple[int | str, ...]]:
    match = _PARTIAL.match(text)
    if match is None:
        raise PackageError(f"'{spec}' is not a version range (try ^1.2.0, ~1.2, >=1.0.0 <2.0.0 or 1.x).")
    parts: list[int | None] = []
    for group in match.groups()[:3]:
        parts.append(None if group is None or group in "xX*" else int(group))
    if parts[0] is None:
        parts[1] = parts[2] = None
    elif parts[1] is None:
        parts[2] = None
    pre = tuple(int(p) if p.isdigit() else p for p in match.group(4).split(".")) if match.group(4) else ()
    return parts[0], parts[1], parts[2], pre


def _expand(op: str, text: str, spec: str) -> list[Comparator]:
    major, minor, patch, pre = _partial(text, spec)
    if major is None:
        return [] if op in ("", "=", ">=", "<=", "^", "~", "~>") else [("<", Version(0, 0, 0))]
    low = Version(major, minor or 0, patch or 0, pre)
    if op == "^":
        if major > 0 or minor is None:
            high = Version(major + 1, 0, 0)
        elif minor > 0 or patch is None:
            high = Version(0, minor + 1, 0)
        else:
            high = Version(0, 0, patch + 1)
        return [(">=", low), ("<", high)]
    if op in ("~", "~>"):
        high = Version(major + 1, 0, 0) if minor is None else Version(major, minor + 1, 0)
        return [(">=", low), ("<", high)]
    if minor is None or patch is None:  # a partial version is a wildcard in its missing parts
        upper = Version(major + 1, 0, 0) if minor is None else Version(major, minor + 1, 0)
        if op in ("", "="):
            return [(">=", low), ("<", upper)]
        if op == ">":
            return [(">=", upper)]
        if op == "<=":
            return [("<", upper)]
        return [(op, low)]  # ">=" 1.2 is >=1.2.0, "<" 1.2 is <1.2.0
    return [(op or "=", low)]


def _hyphen(text: str, spec: str) -> list[Comparator]:
    left, right = (side.strip() for side in text.split(" - ", 1))
    low = _expand(">=", left, spec)
    if _partial(right, spec)[0] is None:
        return low
    return low + _expand("<=", right, spec)  # a partial upper bound takes its whole last part


def _comparator_set(text: str, spec: str) -> list[Comparator]:
    text = text.strip()
    if " - " in text:
        return _hyphen(text, spec)
    tokens = re.sub(r"(\^|~>?|>=|<=|>|<|=)\s+", r"\1", text).split()
    out: list[Comparator] = []
    for token in tokens or ["*"]:
        match = _COMPARATOR.match(token)
        assert match is not None  # the pattern matches any text
        out += _expand(match.group(1) or "", match.group(2), spec)
    return out


@dataclass(frozen=True)
class Range:
    """A union (`||`) of comparator sets; a version satisfies it when it satisfies every
    comparator of one set."""

    text: str
    sets: tuple[tuple[Comparator, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Range:
        spec = text.strip() or "*"
        return cls(spec, tuple(tuple(_comparator_set(part, spec)) for part in spec.split("||")))

    def allows(self, version: Version) -> bool:
        return any(_satisfies(version, comparators) for comparators in self.sets)

    def best(self, versions: list[Version]) -> Version | None:
        allowed = [v for v in versions if self.allows(v)]
        return max(allowed) if allowed else None

    def __str__(self) -> str:
        return self.text


def _satisfies(version: Version, comparators: tuple[Comparator, ...]) -> bool:
    for op, bound in comparators:
        if not {"=": version._key() == bound._key(), ">": version > bound, ">=": version >= bound,
                "<": version < bound, "<=": version <= bound}[op]:
            return False
    if version.pre:  # a pre-release only where a comparator opts in for that very release
        core = (version.major, version.minor, version.patch)
        return any(bound.pre and (bound.major, bound.minor, bound.patch) == core for _, bound in comparators)
    return True
