"""Every Python file the project ships or runs compiles on the interpreter running the suite.

CI runs this file on each Python that `.ci/run` tests (3.11, 3.12, 3.13): a file that leans on one
version's quirk (3.13 refuses a lone surrogate in a docstring; 3.12 warns on an invalid escape that
a later version will refuse) fails here before a user meets it as "Importing skill 'agent' failed".
"""

from __future__ import annotations

import re
import sys
import tomllib
import types
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("agentapps", "skills", "examples", "benchmarks", "tests", ".agent-apps")


def _sources() -> list[Path]:
    found: list[Path] = []
    for tree in TREES:
        found.extend(p for p in (ROOT / tree).rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(found)


def test_the_trees_hold_the_bundled_skills_and_the_package() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert "agentapps/sandbox/bounded.py" in names
    assert "skills/agent/agent.skill.py" in names
    assert len(names) > 200


def test_every_source_compiles_without_warnings_on_this_python() -> None:
    failures: list[str] = []
    for path in _sources():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # SyntaxWarning / DeprecationWarning become failures
            try:
                compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
            except (SyntaxError, ValueError, UnicodeError, Warning) as exc:
                where = path.relative_to(ROOT)
                failures.append(f"{where}: {type(exc).__name__}: {str(exc)[:120]}")
    assert not failures, f"Python {sys.version_info[:2]}:\n" + "\n".join(failures)


def _strings(code: types.CodeType) -> list[str]:
    found: list[str] = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(_strings(const))
        elif isinstance(const, str):
            found.append(const)
        elif isinstance(const, (tuple, frozenset)):
            found.extend(item for item in const if isinstance(item, str))
    return found


def test_shipped_code_holds_no_string_that_utf8_cannot_write() -> None:
    # 3.11 and 3.12 compile a docstring holding a lone surrogate; 3.13 refuses it. Checking the
    # compiled constants catches such a literal on every version (tests may build one on purpose)
    shipped = [p for p in _sources() if p.relative_to(ROOT).parts[0] != "tests"]
    failures = []
    for path in shipped:
        code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        for text in _strings(code):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                failures.append(f"{path.relative_to(ROOT)}: {text[:60]!r}")
    assert not failures, "\n".join(failures)


def test_the_classifiers_name_exactly_the_pythons_ci_tests() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    full = re.search(r'^FULL=([\d.]+)$', ci, re.MULTILINE)
    subset = re.search(r'^SUBSET="([\d. ]+)"$', ci, re.MULTILINE)
    assert full and subset, ".ci/run names its Pythons in FULL= and SUBSET="
    tested = {full.group(1), *subset.group(1).split()}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    prefix = "Programming Language :: Python :: "
    listed = {c.removeprefix(prefix) for c in project["classifiers"]
              if c.startswith(prefix) and re.fullmatch(r"3\.\d+", c.removeprefix(prefix))}
    assert listed == tested
    assert project["requires-python"] == f">={min(tested, key=lambda v: tuple(map(int, v.split('.'))))}"
