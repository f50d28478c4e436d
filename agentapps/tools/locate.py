"""Line numbers of frontmatter keys: YAML node marks for markdown skills, `ast` nodes for code skills."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentapps.errors import SkillLoadError
from agentapps.tools.frontmatter import split_markdown

Key = str | int


class KeyLines:
    """Finds the line of a key path such as ("metadata", "params", "properties") in one file.

    The file is read again and parsed only when a finding needs a line, so clean skills cost
    nothing here. A path that only partly exists gives the line of its deepest existing key.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._parsed = False
        self._yaml: Any = None  # the composed YAML root node
        self._yaml_line = 1
        self._py: ast.expr | None = None  # the literal assigned to `frontmatter`
        self.start = 1  # where the frontmatter starts: the fallback line

    def line(self, keys: Sequence[Key]) -> int:
        return self._mark(keys)[0]

    def written(self, keys: Sequence[Key]) -> int | None:
        """The line of the last key of `keys` when the file writes the whole path, else None (the
        value came from elsewhere, e.g. a `--local` override of the main skill)."""
        line, depth = self._mark(keys)
        return line if depth == len(keys) else None

    def _mark(self, keys: Sequence[Key]) -> tuple[int, int]:
        """(line, how many of `keys` were found)."""
        self._parse()
        if self._yaml is not None:
            line, depth = _yaml_mark(self._yaml, keys, self.start - self._yaml_line)
            return self._yaml_line + line, depth
        if self._py is not None:
            return _ast_line(self._py, keys, self.start)
        return self.start, 0

    def _parse(self) -> None:
        if self._parsed or self.path is None:
            return
        self._parsed = True
        try:
            text = self.path.read_text(encoding="utf-8").removeprefix("\ufeff")  # as the loader does
        except (OSError, UnicodeDecodeError):
            return
        if self.path.name.endswith(".py"):
            self._parse_python(text)
        else:
            self._parse_yaml(text)

    def _parse_yaml(self, text: str) -> None:
        import yaml

        try:
            yaml_text, _, yaml_line, _ = split_markdown(text, self.path or Path())
        except SkillLoadError:
            return
        if yaml_text is None:
            return
        self._yaml_line, self.start = yaml_line, max(yaml_line - 1, 1)
        try:
            self._yaml = yaml.compose(yaml_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            self._yaml = None

    def _parse_python(self, text: str) -> None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == "frontmatter" for t in targets):
                assert isinstance(node, (ast.Assign, ast.AnnAssign))
                self._py, self.start = node.value, node.lineno


def _yaml_mark(node: Any, keys: Sequence[Key], fallback: int) -> tuple[int, int]:
    """The 0-based line (within the YAML text) of the deepest key of `keys` found under `node`,
    and how many keys were found."""
    line, depth = fallback, 0
    for key in keys:
        child = None
        if node.id == "mapping" and isinstance(key, str):
            for key_node, value_node in node.value:
                if key_node.id == "scalar" and key_node.value == key:
                    line, child = key_node.start_mark.line, value_node
                    break
        elif node.id == "sequence" and isinstance(key, int) and 0 <= key < len(node.value):
            child = node.value[key]
            line = child.start_mark.line
        if child is None:
            break
        node, depth = child, depth + 1
    return int(line), depth


def _ast_line(node: ast.expr | None, keys: Sequence[Key], fallback: int) -> tuple[int, int]:
    line, depth = fallback, 0
    for key in keys:
        child: ast.expr | None = None
        if isinstance(node, ast.Dict) and isinstance(key, str):
            for key_node, value_node in zip(node.keys, node.values, strict=True):
                if isinstance(key_node, ast.Constant) and key_node.value == key:
                    line, child = key_node.lineno, value_node
                    break
        elif isinstance(node, (ast.List, ast.Tuple)) and isinstance(key, int) and 0 <= key < len(node.elts):
            child = node.elts[key]
            line = child.lineno
        if child is None:
            break
        node, depth = child, depth + 1
    return line, depth
