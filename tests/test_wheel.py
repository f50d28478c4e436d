"""Packaging: the wheel ships the bundled skills, and an installed copy runs outside the checkout."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs_a_bundled_skill(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=300)
    wheel = next(dist.glob("agentapps-*.whl"))
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
