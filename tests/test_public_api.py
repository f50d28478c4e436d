"""The public API: every name in agentapps.__all__ resolves, and importing the package stays cheap."""

from __future__ import annotations

import subprocess
import sys

import agentapps


def test_every_public_name_resolves():
    for name in agentapps.__all__:
        assert getattr(agentapps, name) is not None, name


def test_importing_the_package_loads_nothing_heavy():
    code = ("import sys, agentapps; heavy = [m for m in ('asyncio', 'jsonschema', 'boto3', 'py_mini_racer', "
            "'jinja2', 'markdown_it', 'agentapps.context.manager') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_python_program_can_run_a_skill(project):
    import asyncio

    root = agentapps.bootstrap(project.root)
    assert asyncio.run(agentapps.invoke_root(root, "hello", {"name": "Ada"})) == "Hello, Ada!"
