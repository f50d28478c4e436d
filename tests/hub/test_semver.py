"""npm-style semver: versions order by precedence, ranges allow what npm's allow."""

from __future__ import annotations

import pytest

from agentapps.errors import PackageError
from agentapps.hub.semver import Range, Version

ALLOWS = [
    # range, version, allowed
    ("1.2.3", "1.2.3", True), ("1.2.3", "1.2.4", False), ("=1.2.3", "1.2.3", True), ("v1.2.3", "1.2.3", True),
    ("^1.2.3", "1.2.3", True), ("^1.2.3", "1.9.0", True), ("^1.2.3", "2.0.0", False), ("^1.2.3", "1.2.2", False),
    ("^0.2.3", "0.2.9", True), ("^0.2.3", "0.3.0", False), ("^0.0.3", "0.0.3", True), ("^0.0.3", "0.0.4", False),
    ("^0.0", "0.0.9", True), ("^0.0", "0.1.0", False), ("^0.x", "0.9.9", True), ("^0.x", "1.0.0", False),
    ("^1.2.x", "1.2.0", True), ("^1.2.x", "1.1.9", False), ("^1", "1.99.0", True), ("^1", "2.0.0", False),
    ("~1.2.3", "1.2.9", True), ("~1.2.3", "1.3.0", False), ("~1.2", "1.2.0", True), ("~1.2", "1.3.0", False),
    ("~1", "1.9.9", True), ("~1", "2.0.0", False), ("~0.2.3", "0.2.4", True), ("~0.2.3", "0.3.0", False),
    (">=1.2.0", "1.2.0", True), (">=1.2.0", "1.1.9", False), (">1.2.0", "1.2.0", False), (">1.2.0", "1.2.1", True),
    ("<2.0.0", "1.9.9", True), ("<2.0.0", "2.0.0", False), ("<=2.0.0", "2.0.0", True), ("<=2.0.0", "2.0.1", False),
    (">=1.0.0 <2.0.0", "1.5.0", True), (">=1.0.0 <2.0.0", "2.0.0", False), (">= 1.0.0 < 2", "1.5.0", True),
    (">1.2", "1.2.9", False), (">1.2", "1.3.0", True), ("<=1.2", "1.2.9", True), ("<=1.2", "1.3.0", False),
    ("<1.2", "1.1.9", True), ("<1.2", "1.2.0", False), (">=1.2", "1.2.0", True),
    ("1.x", "1.0.0", True), ("1.x", "1.99.1", True), ("1.x", "2.0.0", False), ("1.2.x", "1.2.7", True),
    ("1.2.x", "1.3.0", False), ("1.2.*", "1.2.7", True), ("1", "1.4.0", True), ("1.2", "1.2.4", True), ("1.2", "1.3.0", False),
    ("*", "3.4.5", True), ("", "0.0.1", True), ("x", "9.9.9", True),
    ("1.2.3 - 2.3.4", "1.2.3", True), ("1.2.3 - 2.3.4", "2.3.4", True), ("1.2.3 - 2.3.4", "2.3.5", False),
    ("1.2 - 2.3", "2.3.9", True), ("1.2 - 2.3", "2.4.0", False), ("1.2 - 2.3", "1.1.9", False),
    ("^1.0.0 || ^3.0.0", "3.1.0", True), ("^1.0.0 || ^3.0.0", "2.1.0", False), ("1.0.0 || 2.0.0", "2.0.0", True),
    # pre-releases: only where a comparator of the same set opts in for that release
    ("^1.2.3", "1.3.0-beta.1", False), ("*", "1.0.0-rc.1", False), ("^1.2.3-beta.2", "1.2.3-beta.4", True),
    ("^1.2.3-beta.2", "1.2.3-beta.1", False), ("^1.2.3-beta.2", "1.2.4-beta.1", False),
    ("^1.2.3-beta.2", "1.2.3", True), (">=1.0.0-alpha <1.0.0", "1.0.0-beta", True),
]


@pytest.mark.parametrize(("spec", "version", "allowed"), ALLOWS)
def test_a_range_allows_what_npm_allows(spec, version, allowed):
    assert Range.parse(spec).allows(Version.parse(version)) is allowed


ORDER = ["0.9.9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
         "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "10.0.0"]


def test_versions_order_by_semver_precedence():
    shuffled = [ORDER[i] for i in (5, 0, 12, 3, 8, 1, 10, 7, 2, 11, 4, 9, 6)]
    assert [str(v) for v in sorted(Version.parse(t) for t in shuffled)] == ORDER


def test_build_metadata_is_ignored_in_precedence():
    assert not Version.parse("1.0.0+build.1") < Version.parse("1.0.0+build.2")
    assert Range.parse("1.0.0").allows(Version.parse("1.0.0+exp.sha.5114f85"))


def test_the_best_version_is_the_newest_allowed_one():
    versions = [Version.parse(t) for t in ("1.0.0", "1.4.2", "1.10.0", "2.0.0", "2.1.0-beta")]
    assert str(Range.parse("^1.0.0").best(versions)) == "1.10.0"
    assert str(Range.parse("~1.4").best(versions)) == "1.4.2"
    assert Range.parse(">=3").best(versions) is None


@pytest.mark.parametrize("bad", ["1.2", "01.2.3", "1.2.3.4", "a.b.c", "1.2.3-", ""])
def test_a_malformed_version_is_refused(bad):
    with pytest.raises(PackageError, match="is not a semantic version"):
        Version.parse(bad)


@pytest.mark.parametrize("bad", ["^abc", ">=1.2.3.4", "~>", "1.2.3 - ", "^1.2.3-"])
def test_a_malformed_range_is_refused_naming_it(bad):
    with pytest.raises(PackageError, match="is not a version range"):
        Range.parse(bad)
