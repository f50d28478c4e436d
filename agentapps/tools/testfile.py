"""A skill's test cases: the `<skill>.tests.yaml` file beside it, read and checked, each problem a
ConfigError naming the file and line; and the hash that says whether a recorded script is stale.

    # summarize.tests.yaml, beside summarize.skill.md (SKILL.tests.yaml beside a folder's SKILL.md)
    cases:
      - name: outlines the incident report
        args: {path: incident-report.md}
        script: summarize.turns.json          # recorded model turns (default: <stem>.<case>.turns.json)
        stdin: notes.md                       # this file's text is the `input` arg, as piped stdin is
        timeout: 60                           # seconds (default 60)
        expect:
          result: {...}                       # the exact result (JSON equality), and/or
          schema: {type: object, ...}         # a JSON Schema the result must match, and/or
          predicate: is-short                 # a skill called with {result, args}: true or {ok: true} passes
          exit: ok                            # ok (default), an error kind (ArgsError), or an exit code (2)
          error: "substring of the message"   # with a failing exit

The format is documented in docs/toolchain.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentapps.errors import ConfigError
from agentapps.tools.names import FOLDER_SKILL_FILE, SKILL_SUFFIXES, is_valid_name
from agentapps.types import ToolDef

TESTS_SUFFIX = ".tests.yaml"
SCRIPT_SUFFIX = ".turns.json"
DEFAULT_TIMEOUT = 60.0
MAX_TESTS_BYTES = 4 * 1024 * 1024
CASE_KEYS = frozenset({"name", "args", "script", "stdin", "timeout", "expect"})
EXPECT_KEYS = frozenset({"result", "schema", "predicate", "exit", "error"})
# error kinds that are not classes of agentapps.errors: a bug, and a run that was stopped
OTHER_KINDS = frozenset({"InternalError", "Interrupted"})
ABSENT: Any = object()  # `expect.result` not given (None is the JSON null a skill may return)


@dataclass(frozen=True)
class Case:
    """One test case of one skill."""

    name: str
    file: Path  # the tests file
    line: int
    args: dict[str, Any] = field(default_factory=dict)
    script: Path | None = None
    stdin: Path | None = None  # its text is the `input` arg
    timeout: float = DEFAULT_TIMEOUT
    result: Any = ABSENT
    schema: dict[str, Any] | None = None
    predicate: str | None = None
    exit: str | int = "ok"  # "ok", an error kind, or an exit code
    error: str | None = None


def tests_file_for(skill_file: Path) -> Path:
    """Where the test cases of the skill in `skill_file` live."""
    return skill_file.with_name(tests_file_name(skill_file.name))


def tests_file_name(skill_file_name: str) -> str:
    """The name of the tests file beside the skill file named `skill_file_name`."""
    return _stem(skill_file_name) + TESTS_SUFFIX


def skill_file_for(tests_file: Path) -> Path | None:
    """The skill file a tests file belongs to (None: there is none beside it)."""
    stem = tests_file.name[: -len(TESTS_SUFFIX)]
    names = [FOLDER_SKILL_FILE] if stem == FOLDER_SKILL_FILE[:-3] else [stem + s for s in SKILL_SUFFIXES]
    return next((tests_file.with_name(n) for n in names if tests_file.with_name(n).is_file()), None)


def _stem(name: str) -> str:
    for suffix in SKILL_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name.removesuffix(".md")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "case"


def prompt_hash(tool: ToolDef) -> str:
    """What a recorded script was recorded against: SHA-256 (16 hex digits) of a markdown skill's
    prompt (its body), or of a code skill's whole source."""
    text = tool.body if tool.kind == "markdown" or tool.path is None else tool.path.read_text("utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def recorded_hash(script: Path) -> str | None:
    """The prompt hash a recorded script carries (`recorded.promptHash`); None for a script written
    by hand or one that cannot be read."""
    try:
        data = json.loads(script.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    recorded = data.get("recorded") if isinstance(data, dict) else None
    found = recorded.get("promptHash") if isinstance(recorded, dict) else None
    if recorded is not None and not isinstance(found, str):
        return "malformed"  # a `recorded` block without a hash as text: never taken for a hand-written script
    return found if isinstance(found, str) else None


def load_cases(tests_file: Path) -> list[Case]:
    """Read and check a tests file; every problem is a ConfigError naming it and the line."""
    import yaml

    try:
        raw = tests_file.read_bytes()[: MAX_TESTS_BYTES + 1]
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"Cannot read the tests file: {exc.strerror or exc}.", file=tests_file) from None
    except UnicodeDecodeError:
        raise ConfigError("The tests file is not UTF-8 text.", file=tests_file) from None
    if len(raw) > MAX_TESTS_BYTES:
        raise ConfigError(f"The tests file is larger than {MAX_TESTS_BYTES // 2**20} MiB.", file=tests_file)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ConfigError(f"The tests file is not valid YAML: {exc.problem or exc.context}.", file=tests_file,
                          line=mark.line + 1 if mark is not None else None) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"The tests file is not valid YAML: {exc}.", file=tests_file) from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ConfigError("The tests file must be a mapping with a `cases` list.", file=tests_file,
                          line=1)
    if not data["cases"]:  # an empty list would pass as "no tests" and hide a file emptied by mistake
        raise ConfigError("The tests file has no cases: add one under `cases:`, or delete the file.",
                          file=tests_file, line=_line_of(node, ["cases"], 1))
    items = _value_node(node, "cases")
    lines = [n.start_mark.line + 1 for n in items.value] if items is not None else []
    cases: list[Case] = []
    for n, raw_case in enumerate(data["cases"]):
        case_node = items.value[n] if items is not None else None
        cases.append(_case(raw_case, tests_file, lines[n] if n < len(lines) else 1, case_node))
    seen: dict[str, int] = {}
    for case in cases:
        if case.name in seen:
            raise ConfigError(f"Two cases are named '{case.name}' (the first at line {seen[case.name]}); "
                              "rename one.", file=tests_file, line=case.line)
        seen[case.name] = case.line
    return cases


def _value_node(node: Any, key: str) -> Any:
    """The YAML node of `key` in a mapping node (None: not a mapping, or no such key)."""
    if getattr(node, "id", None) != "mapping":
        return None
    return next((v for k, v in node.value if getattr(k, "value", None) == key), None)


def _line_of(node: Any, keys: list[str], default: int) -> int:
    for key in keys:
        node = _value_node(node, key)
        if node is None:
            return default
    return int(node.start_mark.line) + 1


def _within(file: Path, relative: str) -> bool:
    """Whether `relative` names a place in the tests file's folder or below it (symlinks followed):
    a tests file that came with a skill (an installed package) must not have `agentapps test` read
    /etc/passwd, or a file beside the project, into a skill's args."""
    if Path(relative).is_absolute():
        return False
    folder = file.parent.resolve()
    return (folder / relative).resolve().is_relative_to(folder)


def _case(raw: Any, file: Path, line: int, node: Any) -> Case:
    def bad(why: str, *keys: str) -> ConfigError:
        return ConfigError(f"Case {label}: {why}.", file=file, line=_line_of(node, list(keys), line))

    label = f"at line {line}"
    if not isinstance(raw, dict):
        raise ConfigError("Each case must be a mapping with a `name` (and `args`, `expect`, ...).",
                          file=file, line=line)
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise bad("needs a `name` (text)", "name")
    label = f"'{name}'"
    unknown = sorted(set(raw) - CASE_KEYS)
    if unknown:
        raise bad(f"unknown key `{unknown[0]}` (a case has {', '.join(sorted(CASE_KEYS))})", unknown[0])
    args = raw.get("args", {})
    if not isinstance(args, dict):
        raise bad("`args` must be a mapping of param names to values", "args")
    script = raw.get("script")
    if script is not None and (not isinstance(script, str) or not script or not _within(file, script)):
        raise bad("`script` must be a path to a recorded script in the tests file's folder or below it", "script")
    stem = file.name[: -len(TESTS_SUFFIX)]
    script_path = file.parent / (script or f"{stem}.{_slug(name)}{SCRIPT_SUFFIX}")
    stdin = raw.get("stdin")
    if stdin is not None:
        if not isinstance(stdin, str) or not _within(file, stdin) or not (file.parent / stdin).is_file():
            raise bad("`stdin` must name a file in the tests file's folder or below it (its text becomes the "
                      "`input` arg)", "stdin")
        if "input" in args:
            raise bad("has both `stdin` and an `input` arg; keep one", "stdin")
    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise bad("`timeout` must be a positive number of seconds", "timeout")
    expect = raw.get("expect", {})
    if expect is None:
        expect = {}
    if not isinstance(expect, dict):
        raise bad("`expect` must be a mapping (result, schema, predicate, exit, error)", "expect")
    unknown = sorted(set(expect) - EXPECT_KEYS)
    if unknown:
        raise bad(f"unknown expectation `{unknown[0]}` (one of {', '.join(sorted(EXPECT_KEYS))})",
                  "expect", unknown[0])
    exit_ = _exit(expect.get("exit", "ok"), bad)
    schema, predicate, error = expect.get("schema"), expect.get("predicate"), expect.get("error")
    if schema is not None and not isinstance(schema, dict):
        raise bad("`expect.schema` must be a JSON Schema (a mapping)", "expect", "schema")
    if predicate is not None and (not isinstance(predicate, str) or not is_valid_name(predicate)):
        raise bad("`expect.predicate` must name a skill", "expect", "predicate")
    if error is not None and not isinstance(error, str):
        raise bad("`expect.error` must be text the error message contains", "expect", "error")
    checks_result = "result" in expect or schema is not None or predicate is not None
    if exit_ not in ("ok", 0) and checks_result:
        raise bad("expects a failure (`exit`), so it has no result to check: drop `result`, `schema` and "
                  "`predicate`, or `exit`", "expect", "exit")
    if exit_ in ("ok", 0) and error is not None:
        raise bad("`expect.error` needs a failing `exit` (an error kind or an exit code)", "expect", "error")
    return Case(name, file, line, dict(args), script_path, file.parent / stdin if stdin else None,
                float(timeout), expect.get("result", ABSENT),
                schema, predicate, exit_, error)


def _exit(value: Any, bad: Any) -> str | int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise bad("`expect.exit` must be ok, an error kind (ArgsError) or an exit code", "expect", "exit")
    if isinstance(value, int) or value == "ok":
        return value
    if value not in error_kinds():
        raise bad(f"`expect.exit` names no error kind: '{value}' (one of ok, {', '.join(sorted(error_kinds()))})",
                  "expect", "exit")
    return value


def error_kinds() -> frozenset[str]:
    """The kinds a run can end with: every class of the error tree, a bug, an interruption."""
    from agentapps import errors

    classes = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, errors.AgentAppsError)]
    return frozenset(c.__name__ for c in classes) | OTHER_KINDS
