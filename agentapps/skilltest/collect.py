"""Which tests files a `skill-test` call names: skills by name, skill or tests files, folders
(scanned), or, with no target, every tests file of the project."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentapps.errors import ConfigError, UsageError
from agentapps.tools.compiled import compiled_source
from agentapps.tools.index import SKIPPED_DIRS
from agentapps.tools.names import is_skill_file, ref_kind
from agentapps.tools.testfile import TESTS_SUFFIX, Case, load_cases, skill_file_for, tests_file_for


@dataclass(frozen=True)
class Suite:
    """The cases of one skill file. `stand_in`: another skill file the cases run instead (a
    compile's candidate), registered under the skill's name so that it shadows the skill."""

    skill_file: Path
    tests_file: Path
    cases: tuple[Case, ...]
    stand_in: Path | None = None


def collect(cwd: Path, targets: Sequence[str], lookup: object | None = None) -> list[Suite]:
    """The suites `targets` name, in order, each once. A bad tests file is a ConfigError (its file
    and line); a target that names no tests is a UsageError."""
    files: list[Path] = []
    stand_ins: dict[Path, Path] = {}  # tests file -> the compiled skill that shadows its skill
    if not targets:
        from agentapps.boot import find_project

        project, _ = find_project(cwd)
        files += _scan(project or cwd)
    for target in targets:
        files += _files_of(cwd, target, lookup, stand_ins)
    suites: list[Suite] = []
    cwd = cwd.resolve()
    for tests_file in dict.fromkeys(f.resolve() for f in files):
        skill = skill_file_for(tests_file)
        if skill is None:
            stem = tests_file.name[: -len(TESTS_SUFFIX)]
            raise UsageError(f"{tests_file}: no skill file beside it ({stem}.skill.md or {stem}.skill.py); "
                             "a tests file is named after the skill it tests.")
        try:
            cases = load_cases(tests_file)
        except ConfigError as exc:  # shown as `check` shows files: from the working directory
            exc.file = str(tests_file.relative_to(cwd)) if tests_file.is_relative_to(cwd) else exc.file
            raise
        for case in cases:
            _check_schema(case, exc_file=tests_file.relative_to(cwd) if tests_file.is_relative_to(cwd) else tests_file)
        suites.append(Suite(skill, tests_file, tuple(cases), stand_in=stand_ins.get(tests_file)))
    return suites


def shown_path(path: Path) -> Path:
    """A tests file as errors name it: from the working directory when it lies below it, as `check`
    shows files."""
    cwd = Path.cwd().resolve()
    return path.relative_to(cwd) if path.is_relative_to(cwd) else path


def _check_schema(case: Case, exc_file: Path) -> None:
    """A case's `expect.schema` that is no valid JSON Schema: a ConfigError at the case, before any
    case runs (not a failure of that case alone, found once it has run)."""
    if case.schema is None:
        return
    from agentapps.schemas.validation import schema_problem

    problem = schema_problem(case.schema)
    if problem is not None:
        raise ConfigError(f"Case '{case.name}' has an invalid `expect.schema`: {problem}.",  # str() adds file:line
                          file=str(exc_file), line=case.line)


def _files_of(cwd: Path, target: str, lookup: object | None, stand_ins: dict[Path, Path]) -> list[Path]:
    path = cwd / target
    if ref_kind(target) == "name" and not path.exists():
        return [_tests_of_name(target, lookup, stand_ins)]
    if path.is_dir():
        found = _scan(path)
        if not found:
            raise UsageError(f"'{target}' holds no tests files (*{TESTS_SUFFIX}).")
        return found
    if path.is_file() and path.name.endswith(TESTS_SUFFIX):
        return [path]
    if path.is_file() and is_skill_file(path.name):
        tests = tests_file_for(path)
        if not tests.is_file():
            raise UsageError(f"Skill file {target} has no tests: write {tests.name} beside it (docs/toolchain.md).")
        return [tests]
    if path.exists():
        raise UsageError(f"'{target}' is neither a skill, a skill file, a tests file nor a folder.")
    raise UsageError(f"No such skill, file or folder: '{target}'.")


def _tests_of_name(name: str, lookup: object | None, stand_ins: dict[Path, Path]) -> Path:
    if lookup is None:
        raise UsageError(f"No such file or folder: '{name}'.")
    tool = lookup.resolve(name)  # type: ignore[attr-defined]  # SkillNotFoundError suggests close names
    if tool.path is None:
        raise UsageError(f"Skill '{name}' is not a file, so it has no tests file.")
    source = compiled_source(tool)
    if source is not None:  # a compiled skill wins: run its source's cases against it
        tests = tests_file_for(source)
        stand_ins[tests.resolve()] = tool.path
        if tests.is_file():
            return tests
    tests = tests_file_for(tool.path)
    if not tests.is_file():
        raise UsageError(f"Skill '{name}' has no tests: write {tests.name} beside {tool.path} (docs/toolchain.md).")
    return tests


def _scan(folder: Path) -> list[Path]:
    return sorted(_walk(folder))


def _walk(folder: Path) -> Iterator[Path]:
    for base, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if (d == ".agent-apps" or not d.startswith(".")) and d not in SKIPPED_DIRS]
        for name in names:
            if name.endswith(TESTS_SUFFIX):
                yield Path(base) / name
