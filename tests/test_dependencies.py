"""Every declared dependency is imported somewhere, and version floors match what the code uses."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
IMPORT_NAMES = {"python-frontmatter": "frontmatter", "PyYAML": "yaml", "markdown-it-py": "markdown_it", "google-re2": "re2",
                "mini-racer": "py_mini_racer"}


def _declared() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [re.split(r"[<>=!~ \[;]", dep, maxsplit=1)[0] for dep in project["dependencies"]]


def test_every_declared_dependency_is_imported_by_the_code():
    sources = "\n".join(p.read_text() for d in ("agentapps", "skills") for p in (REPO / d).rglob("*.py"))
    for dep in _declared():
        module = IMPORT_NAMES.get(dep, dep.replace("-", "_"))
        assert re.search(rf"^\s*(from|import) {re.escape(module)}\b", sources, re.MULTILINE), f"{dep} is never imported"


def test_the_typer_floor_has_the_vendored_click_the_cli_imports():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    typer = next(d for d in project["dependencies"] if d.startswith("typer"))
    assert re.search(r">=0\.(2[6-9]|[3-9]\d)", typer), typer
