"""Python dependencies a package declares: never installed silently. Without the user's approval
(`--install-deps`, or `installDeps: true` to the hub skills) they are only reported; with it they
are installed with pip into the environment agentapps runs in."""

from __future__ import annotations

import subprocess
import sys

from agentapps.errors import PackageError


def settle(requirements: list[str], *, install: bool) -> list[str]:
    """Notes for the user about `requirements`; pip-installs them when `install` is true."""
    if not requirements:
        return []
    listed = ", ".join(requirements)
    if not install:
        return [(f"Python dependencies declared, not installed: {listed}. Review them, then run again with "
                "--install-deps to pip install them into this environment.")]
    for req in requirements:
        if req.startswith("-"):
            raise PackageError(f"Refusing the Python requirement {req!r}: pip options are not requirements.")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", *requirements],
                          capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise PackageError(f"pip could not install {listed}: {lines[-1] if lines else f'exit {done.returncode}'}")
    return [f"Installed Python dependencies into {sys.prefix}: {listed}."]
