"""Packaging: the wheel (built from the checkout and from the sdist) ships the bundled skills, the
license, `py.typed` and complete metadata, and an installed copy runs outside the checkout: the
quick start's skill, the bundled offline demo and an example project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel` builds from the checkout: built once for this module, since each test
    only reads it or installs it somewhere of its own."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=300)
    return next(dist.glob("agentapps-*.whl"))


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs_a_bundled_skill(tmp_path, wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "agentapps/_bundled/skills/builtins/hello.skill.py" in names
    assert "agentapps/_bundled/skills/pipeline/default.skill.md" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    # The dependencies come from this test's own environment, appended after the venv's site-packages.
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1"}
    result = subprocess.run([str(venv / "bin" / "agentapps"), "run", "hello", "--name", "Ada"], check=False, cwd=outside,
                            env=env, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (0, "Hello, Ada!\n"), result.stderr
    where = subprocess.run([str(venv / "bin" / "agentapps"), "which", "hello"], check=False, cwd=outside, env=env,
                           capture_output=True, text=True, timeout=120).stdout
    assert str(venv) in where and str(REPO) not in where

    # the bundled demo, offline (its bundled replay plays the model), and an example project copied out
    (outside / "notes.md").write_text("# Notes\n\nThe build broke on Tuesday and was fixed on Wednesday.\n")
    demo = subprocess.run([str(venv / "bin" / "agentapps"), "run", "demo-summarize", "--path", "notes.md"],
                          check=False, cwd=outside, env=env, capture_output=True, text=True, timeout=120)
    assert demo.returncode == 0 and demo.stdout.strip(), demo.stderr
    example = shutil.copytree(REPO / "examples" / "summarize", tmp_path / "summarize")
    summary = subprocess.run([str(venv / "bin" / "agentapps"), "run", "-q", "--replay", "summarize.turns.json",
                              "summarize", "--path", "incident-report.md"], check=False, cwd=example, env=env,
                             capture_output=True, text=True, timeout=120)
    assert summary.returncode == 0 and set(json.loads(summary.stdout)) == {"title", "bullets"}, summary.stderr


@pytest.mark.slow
def test_the_sdist_builds_the_same_wheel_with_complete_metadata(tmp_path, wheel):
    sdist = _build_sdist(tmp_path)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")  # (3.13 warns when no filter is named)
    (root,) = unpacked.iterdir()
    again = tmp_path / "again"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(again), str(root)],
                   check=True, capture_output=True, text=True, timeout=300)
    first, second = wheel, next(again.glob("*.whl"))
    assert sorted(zipfile.ZipFile(first).namelist()) == sorted(zipfile.ZipFile(second).namelist())
    names = zipfile.ZipFile(second).namelist()
    assert "agentapps/py.typed" in names and any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = zipfile.ZipFile(second).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for field in ("Name: agentapps", "License-Expression: MIT", "Requires-Python: >=3.11",
                  "Provides-Extra: serve", "Provides-Extra: redis", "Provides-Extra: mcp",
                  "Description-Content-Type: text/markdown", "Classifier: Typing :: Typed"):
        assert field in metadata, field
    from agentapps.version import __version__

    assert f"Version: {__version__}\n" in metadata and first.name == f"agentapps-{__version__}-py3-none-any.whl"


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["uv", "pipx"])
def test_the_wheel_installs_as_a_tool_with_uv_and_pipx(tmp_path, wheel, tool):
    """`uv tool install` and `pipx install` of the built wheel (dependencies from the package index,
    as a user gets them), then the quick start's skill from the tool's own command, outside the checkout."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(bin_dir),
           "UV_CACHE_DIR": str(tmp_path / "cache"), "PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(bin_dir)}
    here = Path(sys.executable).parent  # uv and pipx come with the test extra
    argv = ([str(here / "uv"), "tool", "install", "--python", sys.executable, f"{wheel}[openai]"] if tool == "uv"
            else [str(here / "pipx"), "install", "--python", sys.executable, f"{wheel}[openai]"])
    installed = subprocess.run(argv, check=False, env=env, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    clean = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "NO_COLOR": "1"}
    ran = subprocess.run(["agentapps", "run", "hello", "--name", "Ada"], check=False, cwd=outside, env=clean,
                         capture_output=True, text=True, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "Hello, Ada!\n"), ran.stderr
    # the extra came along: the OpenAI provider finds its SDK (a missing one is a one-line error naming it)
    python = next((tmp_path / ("tools" if tool == "uv" else "pipx/venvs")).glob("agentapps/bin/python"))
    assert subprocess.run([str(python), "-c", "import openai"], check=False, timeout=120).returncode == 0


def _build_sdist(tmp_path: Path) -> Path:
    """The sdist, as `python -m build --sdist` makes it (in its own isolated build environment)."""
    out = tmp_path / "sdist"
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(REPO)], check=True,
                   capture_output=True, text=True, timeout=300)
    return next(out.glob("agentapps-*.tar.gz"))
