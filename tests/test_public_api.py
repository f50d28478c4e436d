"""The public API: `agentapps` and its public modules declare `__all__`, every name resolves, importing
them stays cheap, and bundled skills import nothing else, so a copy of one runs unchanged."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import agentapps

REPO = Path(__file__).resolve().parent.parent
PUBLIC = ("agentapps", "agentapps.skill", "agentapps.pipeline", "agentapps.runtime", "agentapps.io")
BUNDLED = sorted((REPO / "skills").rglob("*.skill.py"))


def test_the_public_set_is_the_one_the_loop_scan_knows():
    from agentapps.core.exports import PUBLIC_MODULES

    assert PUBLIC_MODULES == PUBLIC


@pytest.mark.parametrize("name", PUBLIC)
def test_a_public_module_declares_all_and_promises_stability(name):
    module = importlib.import_module(name)
    assert module.__doc__ is not None and "stable" in module.__doc__.lower()
    assert sorted(module.__all__) == sorted(set(module.__all__)) == sorted(module._EXPORTS)
    for public in module.__all__:
        assert getattr(module, public) is not None, f"{name}.{public}"


def test_every_public_name_resolves():
    for name in agentapps.__all__:
        assert getattr(agentapps, name) is not None, name


def test_an_unknown_public_name_is_an_attribute_error():
    import agentapps.skill

    with pytest.raises(AttributeError, match="'agentapps.skill' has no attribute 'interface'"):
        agentapps.skill.interface  # noqa: B018 - the access is the test


def test_importing_the_public_modules_loads_nothing_else():
    code = ("import sys\nimport agentapps, agentapps.skill, agentapps.pipeline, agentapps.runtime, agentapps.io\n"
            "allowed = {'agentapps', 'agentapps.core', 'agentapps.core.exports', 'agentapps.errors', "
            "'agentapps.skill', 'agentapps.pipeline', 'agentapps.runtime', 'agentapps.io'}\n"
            "heavy = [m for m in ('asyncio', 'jsonschema', 'boto3', 'py_mini_racer', 'jinja2', 'markdown_it') "
            "if m in sys.modules]\n"
            "print(heavy + sorted(m for m in sys.modules if m.startswith('agentapps') and m not in allowed))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None for `import module`, line) for every import anywhere in the file."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found += [(module, alias.name, node.lineno) for alias in node.names]
    return found


def test_bundled_skills_import_only_public_names():
    offenders = []
    for path in BUNDLED:
        for module, name, line in _imports(path):
            where = f"{path.relative_to(REPO)}:{line}"
            if module.startswith("."):
                offenders.append(f"{where}: relative import {module}")
            elif module.split(".")[0] != "agentapps":
                continue  # the standard library (and a provider's own third-party client, lazily)
            elif module not in PUBLIC or name is None:
                offenders.append(f"{where}: {module}{'' if name is None else '.' + name} is not public")
            elif name not in importlib.import_module(module).__all__:
                offenders.append(f"{where}: {name} is not in {module}.__all__")
    assert offenders == []
    assert len(BUNDLED) >= 45


def test_the_import_check_catches_an_internal_import(tmp_path):
    path = tmp_path / "x.skill.py"
    path.write_text("def run(ctx, args):\n    from agentapps.core.paths import path_get\n")
    assert _imports(path) == [("agentapps.core.paths", "path_get", 2)]


def test_a_python_program_can_run_a_skill(project):
    import asyncio

    root = agentapps.bootstrap(project.root)
    assert asyncio.run(agentapps.invoke_root(root, "hello", {"name": "Ada"})) == "Hello, Ada!"


def test_a_copied_bundled_skill_and_middleware_run_unchanged_as_shadows(project):
    """The docs teach shadowing by copying: a copy of file-read and of the validate-args middleware
    into the project wins over the bundled ones and behaves the same through the real CLI."""
    skills = project.root / ".agent-apps" / "skills"
    skills.mkdir()
    for bundled in ("builtins/file-read.skill.py", "pipeline/validate-args.skill.py"):
        shutil.copy(REPO / "skills" / bundled, skills)
    project.write("notes.txt", "one\ntwo\nthree\n")
    for name in ("file-read", "validate-args"):
        which = project.cli("which", name)
        assert which.returncode == 0, which.stderr
        assert which.stdout.startswith(f"{skills / name}.skill.py  (project-skills)\n"), which.stdout
        assert "shadowed: " in which.stdout

    runs = [("file-read", "--path", "notes.txt", "--offset", "1", "--limit", "1"),
            ("file-read", "--path", "../outside.txt"),  # confinement: denied, exit 3
            ("file-read", "--arg-json", '{"path": "notes.txt", "limit": 0}')]  # validate-args: exit 2

    def outcome(argv: tuple[str, ...], file: Path) -> tuple[int, str, str]:
        done = project.cli("run", *argv)
        return done.returncode, done.stdout, done.stderr.replace(str(file), "FILE")  # errors name the file

    copied = [outcome(argv, skills / "file-read.skill.py") for argv in runs]
    assert [code for code, _, _ in copied] == [0, 3, 2]
    assert copied[0][1].startswith("two\n")
    assert "FILE: Invalid arguments for skill 'file-read'" in copied[2][2]
    assert agentapps.run("file-read", {"path": "notes.txt", "limit": 1}).startswith("one\n")

    shutil.rmtree(skills)  # the bundled originals answer exactly the same
    # where the CLI finds them: the checkout's skills/, or the installed wheel's copy (CI)
    bundled = Path(project.cli("which", "file-read").stdout.split("  (bundled)")[0])
    assert bundled.name == "file-read.skill.py" and bundled.is_file()
    assert copied == [outcome(argv, bundled) for argv in runs]


def test_the_version_is_written_once_and_said_the_same_everywhere():
    import importlib.metadata

    from agentapps.version import __version__

    printed = subprocess.run([sys.executable, "-m", "agentapps", "--version"], check=False, capture_output=True,
                             text=True)
    assert printed.stdout == f"agentapps {__version__}\n"
    assert __version__ == importlib.metadata.version("agentapps")
