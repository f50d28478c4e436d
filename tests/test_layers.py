"""The packages form layers with no cycle, counting imports inside functions and under
`if TYPE_CHECKING:`: the contract in pyproject.toml ([tool.importlinter]) is kept, and it is one
that either kind of import breaks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the `agentapps` package found in `root`, with `root`'s contract."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    return subprocess.run([sys.executable, "-c", code], cwd=root, env={"PYTHONPATH": str(root), "PATH": ""},
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_packages_keep_their_layers():
    result = lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def with_core_paths_appended(tmp_path: Path, code: str) -> Path:
    """A copy of the package and its contract, with `code` added at the end of core/paths.py."""
    shutil.copytree(REPO / "agentapps", tmp_path / "agentapps", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / "agentapps" / "core" / "paths.py").open("a") as module:
        module.write(code)
    return tmp_path


def test_an_upward_import_inside_a_function_breaks_the_contract(tmp_path):
    root = with_core_paths_appended(tmp_path, "\n\ndef _lazy():\n    from agentapps.cli import render  # a core "
                                              "helper reaching the CLI\n    return render\n")
    result = lint(root)
    assert result.returncode == 1
    assert "agentapps.core.paths -> agentapps.cli.render" in result.stdout


def test_an_upward_import_for_annotations_only_breaks_the_contract(tmp_path):
    # a type named from above is a dependency too: it belongs in a lower layer (a protocol)
    root = with_core_paths_appended(tmp_path, "\n\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                              "    from agentapps.context.context import Context\n")
    result = lint(root)
    assert result.returncode == 1
    assert "agentapps.core.paths -> agentapps.context.context" in result.stdout


def test_no_module_imports_a_private_part_of_a_dependency():
    # a dependency's `_private` module or name may change in any release (typer's vendored `_click`)
    import ast

    found = []
    for path in sorted((REPO / "agentapps").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                top, *rest = name.split(".")
                if top in sys.stdlib_module_names or top == "agentapps":
                    continue
                if any(part.startswith("_") and not part.startswith("__") for part in rest):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    assert found == []
