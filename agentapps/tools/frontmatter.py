"""Reading frontmatter safely: YAML in markdown skills, a literal dict in Python skills (never executed)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from agentapps.errors import SkillLoadError

MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_DEPTH = 64
MAX_INT_DIGITS = 4300  # Python's own limit for turning an int into text (json, repr, the index)
_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3219280948873626)  # log2(10): fewer bits, at most that many digits
# where a YAML anchor (&x) or alias (*x) could start; globs like `file-*` or quoted "*" cannot
_MAYBE_ALIAS = re.compile(r"(?:^|[\s\[{,])[&*][^\s,\[\]{}]", re.MULTILINE)


def split_markdown(text: str, file: Path) -> tuple[str | None, str, int, int]:
    """Return (yaml text or None, body, line where the YAML starts, line where the body starts)."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    first = 0
    if lines and lines[0].startswith("#!"):  # shebang line: `#!/usr/bin/env -S agentapps run`
        first = 1
    if len(lines) <= first or lines[first].rstrip() != "---":
        return None, "\n".join(lines[first:]), 1, first + 1
    size = 0
    for i in range(first + 1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            yaml_text = "\n".join(lines[first + 1 : i])
            return yaml_text, "\n".join(lines[i + 1 :]), first + 2, i + 2
        size += len(lines[i]) + 1
        if size > MAX_FRONTMATTER_BYTES:
            raise SkillLoadError(
                f"Frontmatter is larger than {MAX_FRONTMATTER_BYTES // 1024} KiB; "
                "move long text into the body.",
                file=file,
                line=first + 1,
            )
    raise SkillLoadError(
        "Frontmatter starts with '---' but never ends; add a closing '---' line.",
        file=file,
        line=first + 1,
    )


@cache
def _handler_class() -> type:
    """python-frontmatter's YAML handler, with our boundaries and our strict loader (built on first
    use: importing python-frontmatter pulls in PyYAML, which a code skill never needs)."""
    from frontmatter.default_handlers import YAMLHandler

    class SkillYAMLHandler(YAMLHandler):
        """Splits like `split_markdown` (shebang line, `---`/`...`, size cap, line numbers) and
        loads with `load_yaml` (safe types, no aliases, no duplicate keys, file:line errors)."""

        def __init__(self, file: Path) -> None:
            super().__init__()
            self.file, self.yaml_line, self.body_line, self.body = file, 1, 1, ""

        def split(self, text: str) -> tuple[str, str]:
            yaml_text, self.body, self.yaml_line, self.body_line = split_markdown(text, self.file)
            if yaml_text is None:
                raise ValueError("no frontmatter")  # python-frontmatter's "nothing to split"
            return yaml_text, self.body

        def load(self, fm: str, **kwargs: object) -> dict[str, Any]:
            return load_yaml(fm, self.file, self.yaml_line)

    return SkillYAMLHandler


def read_markdown(text: str, file: Path) -> tuple[dict[str, Any], str, int, int]:
    """(frontmatter, body, line of the frontmatter, line of the body) of a markdown skill file."""
    handler = _handler_class()(file)
    try:
        yaml_text, body = handler.split(text)
    except ValueError:
        return {}, handler.body, 1, handler.body_line
    return handler.load(yaml_text), body, handler.yaml_line, handler.body_line


def load_yaml(yaml_text: str, file: Path, first_line: int) -> dict[str, Any]:
    """Parse frontmatter YAML: safe types only, no aliases, no duplicate keys, bounded size."""
    import yaml

    if len(yaml_text.encode("utf-8", "replace")) > MAX_FRONTMATTER_BYTES:
        raise SkillLoadError(
            f"Frontmatter is larger than {MAX_FRONTMATTER_BYTES // 1024} KiB.", file=file, line=first_line
        )
    loader_base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if _MAYBE_ALIAS.search(yaml_text):
        loader_base = yaml.SafeLoader  # the pure-Python composer lets us refuse aliases before expansion

    last_line = first_line + max(yaml_text.count("\n"), 0)

    def fail(message: str, mark: Any) -> SkillLoadError:
        line = min(first_line + (mark.line if mark is not None else 0), last_line)
        return SkillLoadError(message, file=file, line=line)

    class Loader(loader_base):  # type: ignore[misc]
        def construct_object(self, node: Any, deep: bool = False) -> Any:
            # a scalar YAML accepts but Python cannot hold or print (a 5,000-digit int, month 13)
            try:
                value = super().construct_object(node, deep=deep)
            except ValueError as exc:
                if str(node.tag).endswith(":int"):
                    raise fail(_TOO_LONG, node.start_mark) from None
                raise fail(f"Invalid value in frontmatter: {_first_sentence(exc)}; quote it to keep it as text.",
                           node.start_mark) from None
            if _too_long(value):
                raise fail(_TOO_LONG, node.start_mark)
            return value

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise fail("YAML aliases (*name) are not allowed in frontmatter.", self.peek_event().start_mark)
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (list, dict)):
                    raise fail("Frontmatter keys must be plain scalars.", key_node.start_mark)
                if key in seen:
                    raise fail(f"Duplicate key '{key}' in frontmatter.", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        data = yaml.load(yaml_text, Loader=Loader)
    except SkillLoadError:
        raise
    except yaml.MarkedYAMLError as exc:
        problem = exc.problem or exc.context or "invalid YAML"
        raise fail(f"Invalid YAML in frontmatter: {problem}.", exc.problem_mark) from None
    except yaml.YAMLError as exc:
        raise SkillLoadError(f"Invalid YAML in frontmatter: {exc}.", file=file, line=first_line) from None
    except RecursionError:
        raise SkillLoadError("Frontmatter is nested too deeply.", file=file, line=first_line) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillLoadError("Frontmatter must be a YAML mapping (key: value).", file=file, line=first_line)
    _check_depth(data, file, first_line)
    return data


_TOO_LONG = f"An integer in frontmatter has more than {MAX_INT_DIGITS} digits; quote it to keep it as text."


def _too_long(value: Any) -> bool:
    return isinstance(value, int) and value.bit_length() > _MAX_INT_BITS


def _first_sentence(exc: ValueError) -> str:
    return str(exc).split(";")[0].rstrip(".")


def _check_depth(value: Any, file: Path, line: int, depth: int = 0) -> None:
    """Refuse nesting deeper than MAX_DEPTH and integers no JSON writer can print (keys included)."""
    if depth > MAX_DEPTH:
        raise SkillLoadError(f"Frontmatter is nested deeper than {MAX_DEPTH} levels.", file=file, line=line)
    if _too_long(value):
        raise SkillLoadError(_TOO_LONG, file=file, line=line)
    if isinstance(value, dict):
        for key, item in value.items():
            if _too_long(key):
                raise SkillLoadError(_TOO_LONG, file=file, line=line)
            _check_depth(item, file, line, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_depth(item, file, line, depth + 1)


def read_python_frontmatter(source: str, file: Path) -> tuple[dict[str, Any], int]:
    """Find `frontmatter = {...}` at module level and evaluate it as a literal, without running the module."""
    import ast  # only when a code skill is read from its file (the index keeps the result)

    try:
        tree = ast.parse(source.removeprefix("\ufeff"), filename=str(file))  # Python accepts a UTF-8 BOM
    except SyntaxError as exc:
        raise SkillLoadError(f"Python syntax error: {exc.msg.rstrip('.')}.", file=file, line=exc.lineno) from None
    has_run = False
    found: tuple[dict[str, Any], int] | None = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "run":
            has_run = True
        targets: list[ast.expr] = []
        value_node: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value_node = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value_node = [node.target], node.value
        if value_node is not None and any(isinstance(t, ast.Name) and t.id == "frontmatter" for t in targets):
            try:
                value = ast.literal_eval(value_node)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                raise SkillLoadError(
                    "`frontmatter` must be a literal dict (no names, calls or f-strings).",
                    file=file,
                    line=node.lineno,
                ) from None
            if not isinstance(value, dict):
                raise SkillLoadError("`frontmatter` must be a dict.", file=file, line=node.lineno)
            _check_depth(value, file, node.lineno)
            found = (value, node.lineno)
    if not has_run:
        raise SkillLoadError(
            "A code skill needs a module-level function `run(ctx, args)`.", file=file, line=1
        )
    return found if found is not None else ({}, 1)
