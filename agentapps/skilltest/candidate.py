"""A compiled skill file: the checks a model's candidate code
must pass before it is run, and the file the toolchain assembles around that code.

The model writes only the code. The frontmatter comes from the source skill (plus
`compiled-from`), so a candidate cannot give itself another name, more `allowed-tools`, another
visibility or role than the markdown skill it replaces.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from agentapps.tools.compiled import MARKER


def code_problem(code: str) -> str | None:
    """Why the model's code cannot be a skill's body, before it is ever run (None: it can be)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"Python syntax error at line {exc.lineno}: {exc.msg}"
    has_run = False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "run":
            has_run = True
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return "remove `from __future__` imports (the toolchain writes the module's first lines)"
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == "frontmatter" for t in targets):
            return "do not define `frontmatter`: the toolchain writes it from the source skill"
    if not has_run:
        return "the code defines no module-level function `run(ctx, args)`"
    return None


def compiled_frontmatter(frontmatter: dict[str, Any], compiled_from: str) -> dict[str, Any]:
    """The source's frontmatter with `metadata.compiled-from`. The compiled code may call the
    `agent` skill (where judgement is needed), which is hidden and so must be named in
    `allowed-tools` (no `allowed-tools` becomes `* agent`: a bare `*` admits what no list admits,
    every visible skill but the skill itself); everything else the source's `allowed-tools` say
    stands."""
    out = copy.deepcopy(frontmatter)
    meta = out.setdefault("metadata", {})
    meta["compiled-from"] = compiled_from
    allowed = out.get("allowed-tools")
    if allowed is None:
        out["allowed-tools"] = "* agent"
    elif isinstance(allowed, str) and "agent" not in allowed.split():
        out["allowed-tools"] = f"{allowed} agent".strip()
    return out


def assemble(code: str, frontmatter: dict[str, Any], digest: str) -> str:
    """The compiled file: marker, a note, the frontmatter as a literal, then the model's code."""
    source = frontmatter.get("metadata", {}).get("compiled-from", "")
    literal = _literal(frontmatter, 0)
    return (f"{MARKER}{digest}\n"
            f'"""Compiled by `agentapps compile` from {source}. Edit the source and compile again: a\n'
            "compile replaces this file while its first line carries the marker (delete that line to keep\n"
            'it as code of your own)."""\n\n'
            f"frontmatter = {literal}\n\n\n{code.strip()}\n")


def _literal(value: Any, indent: int) -> str:
    """`value` as a Python literal laid out one key per line, short parts on one line."""
    flat = repr(value)
    if len(flat) + indent <= 96 or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 4)
    if isinstance(value, dict):
        items = [f"{pad}{k!r}: {_literal(v, indent + 4)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + "\n".join(f"{pad}{_literal(v, indent + 4)}," for v in value) + "\n" + " " * indent + "]"
