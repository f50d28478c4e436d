"""Writing code is privileged (issue 9 §3): a skill allowed only `file-write` cannot create or change
skill code without the trust gate's approval, and a run never loads skill code written after it
started, whoever wrote it."""

from __future__ import annotations

import json
import os
import shlex
import time
from typing import Any

import pytest

from agentapps.errors import DeniedError

WRITER = """
frontmatter = {"name": "writer", "allowed-tools": "file-write", "metadata": {"params": {"type": "object"}}}

async def run(ctx, args):
    return await ctx.manager.invoke("file-write", args)
"""

CODE = """
frontmatter = {{"name": {name!r}, "metadata": {{"params": {{"type": "object"}}}}}}

def run(ctx, args):
    return "code from {name}"
"""
MARKDOWN = "---\nname: {name}\ndescription: x\n---\nDo it.\n"
MAIN = "---\nname: proj\ndescription: main\nmetadata:\n  role: main\n---\nMain.\n"

# (path written, its text) — every kind of file the loader takes as a skill
PROTECTED = [
    ("skills/file-write.skill.py", CODE.format(name="file-write")),  # shadows a built-in
    ("helper.skill.py", CODE.format(name="helper")),
    ("notes/evil.skill.md", MARKDOWN.format(name="evil")),
    ("tools/kit/SKILL.md", MARKDOWN.format(name="kit")),
    ("proj.skill.md", MAIN),  # the project's main skill
    ("default.skill.md", MARKDOWN.format(name="default")),  # the pipeline
    ("validate-allowed-tools.skill.py", CODE.format(name="validate-allowed-tools")),  # a middleware
    ("docs/../late.skill.py", CODE.format(name="late")),
]


@pytest.fixture
def writer(project: Any) -> Any:
    project.write("proj.skill.md", MAIN)
    project.write("writer.skill.py", WRITER)
    project.write("docs/readme.txt", "r\n")
    return project


def _write(project: Any, path: str, text: str, *extra: str, **env: str) -> Any:
    return project.cli("run", *extra, "writer", "--arg-json", json.dumps({"path": path, "content": text}), **env)


@pytest.mark.parametrize(("path", "text"), PROTECTED)
def test_writing_skill_code_needs_approval(writer: Any, path: str, text: str) -> None:
    target = writer.root / os.path.normpath(path)
    before = target.read_bytes() if target.exists() else None
    denied = _write(writer, path, text)
    assert denied.returncode == 3, denied.stderr
    assert "needs approval" in denied.stderr and "--approve 'file-write'" in denied.stderr
    assert (target.read_bytes() if target.exists() else None) == before

    approved = _write(writer, path, text, "--approve", "file-write")
    assert approved.returncode == 0, approved.stderr
    assert target.read_text() == text


@pytest.mark.parametrize("path", ["x.skill.py", "sub/SKILL.md", "a.skill.md"])
def test_appending_to_skill_code_needs_approval_too(writer: Any, path: str) -> None:
    writer.write(path, CODE.format(name="x") if path.endswith(".py") else MARKDOWN.format(name="a"))
    before = (writer.root / path).read_text()
    result = writer.cli("run", "writer", "--arg-json", json.dumps({"path": path, "content": "\nimport os",
                                                                   "append": True}))
    assert result.returncode == 3
    assert (writer.root / path).read_text() == before


def test_a_symlink_to_a_skill_file_does_not_hide_it(writer: Any) -> None:
    writer.write("tool.skill.py", CODE.format(name="tool"))
    os.symlink("tool.skill.py", writer.root / "docs" / "innocent.txt")
    result = _write(writer, "docs/innocent.txt", "evil")
    assert result.returncode == 3 and "tool.skill.py" in result.stderr
    assert "code from tool" in (writer.root / "tool.skill.py").read_text()


def test_other_files_need_no_approval_and_the_user_may_write_skills_directly(writer: Any) -> None:
    assert _write(writer, "docs/notes.md", "fine").returncode == 0
    assert _write(writer, "docs/skill.md.txt", "fine").returncode == 0
    direct = writer.cli("run", "file-write", "--arg-json",
                        json.dumps({"path": "mine.skill.md", "content": MARKDOWN.format(name="mine")}))
    assert direct.returncode == 0, direct.stderr  # the user's own command, not a skill's


def test_an_approved_skill_runs_in_the_next_run(writer: Any) -> None:
    assert _write(writer, "helper.skill.py", CODE.format(name="helper"), "--approve", "file-write").returncode == 0
    later = writer.cli("run", "helper")
    assert later.returncode == 0 and later.stdout.strip() == "code from helper"


CHAIN = """
frontmatter = {{"name": "chain", "allowed-tools": {allowed!r}, "metadata": {{"params": {{"type": "object"}}}}}}

async def run(ctx, args):
    for call, with_args in args["steps"]:
        await ctx.manager.invoke(call, with_args)
    return await ctx.manager.invoke(args["then"], {{}})
"""


@pytest.mark.parametrize("kind", ["code", "markdown"])
def test_skill_code_written_mid_run_is_never_loaded_by_that_run(writer: Any, kind: str) -> None:
    """Even approved, a file written during the run is refused until the next run."""
    name = "fresh"
    path, text = (f"{name}.skill.py", CODE.format(name=name)) if kind == "code" else (
        f"{name}.skill.md", MARKDOWN.format(name=name))
    writer.write("chain.skill.py", CHAIN.format(allowed="file-write fresh"))
    args = {"steps": [["file-write", {"path": path, "content": text}]], "then": name}
    result = writer.cli("run", "--approve", "file-write", "chain", "--arg-json", json.dumps(args))
    assert result.returncode == 3, result.stderr
    assert "written after this run started" in result.stderr and path in result.stderr
    assert (writer.root / path).read_text() == text  # written, just not loaded


def test_a_file_written_mid_run_by_a_shell_command_is_not_loaded(writer: Any) -> None:
    writer.write("chain.skill.py", CHAIN.format(allowed="shell planted"))
    script = f"printf '%s' {shlex.quote(CODE.format(name='planted'))} > planted.skill.py"
    args = {"steps": [["shell", {"command": script}]], "then": "planted"}
    result = writer.cli("run", "chain", "--arg-json", json.dumps(args))
    assert result.returncode == 3, result.stderr
    assert "written after this run started" in result.stderr and "planted.skill.py" in result.stderr
    assert writer.cli("run", "planted").stdout.strip() == "code from planted"  # the next run loads it


def test_an_existing_skill_replaced_mid_run_with_its_old_times_is_not_loaded(writer: Any) -> None:
    """os.utime can put the modification time back, never the inode change time."""
    original = writer.write("victim.skill.py", CODE.format(name="victim"))
    old = original.stat()
    time.sleep(0.02)
    root = writer.boot()
    original.write_text(CODE.format(name="victim").replace("code from", "evil from"))
    os.utime(original, ns=(old.st_atime_ns, old.st_mtime_ns))
    with pytest.raises(DeniedError, match="written after this run started"):
        writer.invoke("victim", {}, root=root)


def test_a_forged_bytecode_cache_is_never_executed(writer: Any) -> None:
    """A `.pyc` beside a skill file (writable by whoever may write there) is not what runs."""
    import importlib.util
    import py_compile

    source = writer.write("cached.skill.py", CODE.format(name="cached"))
    evil = writer.root / "evil_src.py"
    evil.write_text(CODE.format(name="cached").replace("code from", "evil from"))
    info = source.stat()
    os.utime(evil, ns=(info.st_atime_ns, info.st_mtime_ns))
    evil.write_text(evil.read_text()[: info.st_size].ljust(info.st_size))  # same size as the source
    os.utime(evil, ns=(info.st_atime_ns, info.st_mtime_ns))
    py_compile.compile(str(evil), cfile=importlib.util.cache_from_source(str(source)), doraise=True)
    assert writer.invoke("cached", {}) == "code from cached"


@pytest.mark.parametrize("path", [".venv/lib/python3.11/site-packages/evil.pth", ".github/workflows/ci.yml",
                                  "venv/bin/activate"])
def test_files_that_become_code_elsewhere_need_approval(writer: Any, path: str) -> None:
    result = _write(writer, path, "import os; os.system('id')\n")
    assert result.returncode == 3, result.stderr
    assert not (writer.root / path).exists()


def test_the_file_behind_a_symlinked_skill_is_protected_like_the_skill(writer: Any) -> None:
    writer.write("shared/impl.txt", CODE.format(name="linked"))
    (writer.root / "linked.skill.py").symlink_to("shared/impl.txt")
    result = _write(writer, "shared/impl.txt", CODE.format(name="linked").replace("code from", "evil from"))
    assert result.returncode == 3, result.stderr
    assert "evil" not in (writer.root / "shared" / "impl.txt").read_text()
    assert _write(writer, "shared/other.txt", "plain text\n").returncode == 0  # ordinary files are not


def test_agentapps_own_cache_inside_the_project_is_protected(writer: Any) -> None:
    # a project at the home folder holds ~/.cache/agentapps: compiled skill code and indexes live there
    cache = writer.root / "cache-here"
    result = _write(writer, "cache-here/code/ab/abcdef", "forged", AGENTAPPS_CACHE_DIR=str(cache))
    assert result.returncode == 3, result.stderr
    assert not (cache / "code" / "ab" / "abcdef").exists()


@pytest.mark.parametrize("path", [".github/actions/setup/action.yml", "sub/.venv/lib/python3.11/site-packages/x.pth",
                                  "a/.git/hooks/pre-commit", "deep/venv/bin/activate", ".gitlab/ci/jobs.yml"])
def test_code_that_runs_elsewhere_is_protected_at_any_depth(writer: Any, path: str) -> None:
    result = _write(writer, path, "echo pwned\n")
    assert result.returncode == 3, result.stderr
    assert not (writer.root / path).exists()


@pytest.mark.parametrize("venv", ["env", ".tox/py311", "tools/.nox/lint", "python-env"])
def test_a_virtual_environment_is_protected_whatever_its_folder_is_called(writer: Any, venv: str) -> None:
    # `python -m venv env` (the tutorial's spelling): a .pth file in it runs at every start of its python
    writer.write(f"{venv}/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n")
    for path in (f"{venv}/lib/python3.11/site-packages/evil.pth", f"{venv}/bin/activate"):
        result = _write(writer, path, "import os; os.system('id')\n")
        assert result.returncode == 3, result.stderr
        assert "writing skill code" in result.stderr
        assert not (writer.root / path).exists()
    assert _write(writer, f"{venv}-notes/x.pth", "plain\n").returncode == 0  # a look-alike folder is not one



@pytest.mark.parametrize("env", ["cenv", ".pixi/envs/default", "tools/.conda"])
def test_a_conda_environment_is_protected_whatever_its_folder_is_called(writer: Any, env: str) -> None:
    # `conda create -p ./cenv`, pixi, mamba: no pyvenv.cfg, but a conda-meta/ folder
    writer.write(f"{env}/conda-meta/history", "==> 2024-01-01 00:00:00 <==\n")
    for path in (f"{env}/lib/python3.11/site-packages/evil.pth", f"{env}/etc/conda/activate.d/evil.sh",
                 f"{env}/bin/python3", f"{env}/conda-meta/evil-0.1-0.json"):
        result = _write(writer, path, "import os; os.system('id')\n")
        assert result.returncode == 3, result.stderr
        assert "writing skill code" in result.stderr
        assert not (writer.root / path).exists()
    assert _write(writer, f"{env}-notes/x.pth", "plain\n").returncode == 0  # a look-alike folder is not one


@pytest.mark.parametrize("path", ["__pypackages__/3.11/lib/evil.pth", "sub/__pypackages__/3.12/lib/x/__init__.py",
                                  "vendor/lib/site-packages/evil.pth", "usr/lib/python3/dist-packages/evil.pth",
                                  "new-env/conda-meta/history"])
def test_python_package_folders_are_protected_by_name(writer: Any, path: str) -> None:
    # PEP 582 (pdm) puts packages in __pypackages__/X.Y/lib, which `python` adds to sys.path
    result = _write(writer, path, "import os; os.system('id')\n")
    assert result.returncode == 3, result.stderr
    assert not (writer.root / path).exists()

def test_python_m_agentapps_never_imports_a_module_from_the_working_directory(project):
    """A module written into the project (by a skill, by agent code) must not stand in for a
    standard one that a run imports later: `python -m` would put the project first on sys.path."""
    project.write("colorsys.py", "open('hijacked', 'w').write('yes')\n")
    project.write("skills/tint.skill.py", 'frontmatter = {"name": "tint"}\n\n\ndef run(ctx, args):\n'
                  "    import colorsys\n\n    return round(colorsys.rgb_to_hsv(1, 0, 0)[2], 1)\n")
    result = project.cli("run", "tint")
    assert result.returncode == 0 and result.stdout == "1\n", result.stderr
    assert not (project.root / "hijacked").exists()
