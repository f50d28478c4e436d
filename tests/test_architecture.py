"""Architecture rules: the kernel never imports skills/, and the hot path stays free of heavy imports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("boto3", "botocore", "py_mini_racer", "markdown_it", "jinja2", "mcp", "mcp_types", "anyio", "httpx2",
         "pydantic", "starlette", "uvicorn", "rich", "typer", "redis", "jsonschema", "tree_sitter",
         "tree_sitter_bash", "cronsim", "pathspec", "openai", "anthropic", "opentelemetry")


def test_kernel_never_imports_from_skills():
    offenders = []
    for path in (REPO / "agentapps").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path}: {n}" for n in names if n == "skills" or n.startswith("skills.")]
    assert offenders == []


@pytest.mark.parametrize("with_mcp", [False, True])
def test_running_a_code_skill_imports_no_heavy_dependency(project, with_mcp):
    project.write("noop.skill.py", 'frontmatter = {"name": "noop"}\n\ndef run(ctx, args):\n    return "ok"\n')
    if with_mcp:  # a project declaring MCP servers: they start, and the SDK loads, only when used
        project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n  mcp:\n"
                      "    github: { command: npx, args: [-y, server-github], env: { T: '${GITHUB_TOKEN}' } }\n---\n")
    code = (
        "import sys, json\n"
        "from agentapps.cli import main\n"
        "try:\n    main(['run', 'noop'])\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=project.root, env=project.env(),
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[0] == "ok"
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_a_skill_with_plain_params_and_returns_runs_without_jsonschema(project):
    """schemas/plain.py pays only while plain schemas keep jsonschema (over 100 ms of imports) unloaded."""
    params = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}, "n": {"type": "integer",
              "minimum": 0}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name"],
              "additionalProperties": False}
    returns = {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]}
    project.write("greet.skill.py", f'frontmatter = {{"name": "greet", "metadata": {{"params": {params!r}, '
                  f'"returns": {returns!r}}}}}\n\ndef run(ctx, args):\n    return {{"greeting": "hi " + args["name"]}}\n')
    code = ("import sys, json\nfrom agentapps.cli import main\n"
            "try:\n    main(['run', '--json', 'greet', '--name', 'Ada', '--n', '2'])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m == 'jsonschema' or m.startswith('jsonschema.'))))\n")
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=project.root, env=project.env(),
                            capture_output=True, text=True, timeout=60)
    assert "hi Ada" in result.stdout, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_a_plain_code_skill_run_loads_only_what_it_uses(project):
    """Nothing waits, nothing logs, no override or foreign tool name: none of their modules load."""
    project.write("noop.skill.py", 'frontmatter = {"name": "noop", "allowed-tools": "file-read"}\n\n'
                  'def run(ctx, args):\n    return "ok"\n')
    unused = ("asyncio", "logging", "agentapps.cascade.local", "agentapps.tools.foreign", "agentapps.agent",
              "dataclasses", "inspect")
    code = ("import sys, json\nfrom agentapps.cli import main\n"
            "try:\n    main(['run', 'noop'])\nexcept SystemExit:\n    pass\n"
            f"print(json.dumps([m for m in {unused!r} if m in sys.modules]))\n")
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=project.root, env=project.env(),
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[0] == "ok", result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


@pytest.mark.parametrize("argv", [["list"], ["list", "-Q", "noop", "--tag", "x", "--all", "--json"],
                                  ["list", "--query=noop", "-a"], ["list", "--help"], ["list", "--bogus"]])
def test_listing_never_imports_typer(project, argv):
    """`list` parses its own argv, help and usage errors included: typer would double its start-up."""
    project.write("noop.skill.py", 'frontmatter = {"name": "noop"}\n\ndef run(ctx, args):\n    return "ok"\n')
    code = (
        "import sys, json\n"
        "from agentapps.cli import dispatch\n"
        f"code = dispatch({argv!r})\n"
        f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=project.root, env=project.env(),
                            capture_output=True, text=True, timeout=60)
    assert json.loads(result.stderr.splitlines()[-1]) == [2 if "--bogus" in argv else 0, []]
    if argv == ["list"]:
        assert "noop" in result.stdout


def test_every_dataclass_has_its_own_docstring():
    # without one, dataclasses builds a docstring with inspect.signature at import (0.3-5 ms each on
    # the cold path of every command)
    missing = []
    for path in (REPO / "agentapps").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    "dataclass" in ast.unparse(d) for d in node.decorator_list) and ast.get_docstring(node) is None:
                missing.append(f"{path.relative_to(REPO)}: {node.name}")
    assert missing == []
