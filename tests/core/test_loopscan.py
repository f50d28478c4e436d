"""Which skills a run may drive without an event loop, checked against the code rather than kept by hand.

The table of agentapps modules that reach asyncio is derived from the import graph and must match
the code; every bundled, example and repository skill is classified as its imports say; and the
bundled skills classified loop-free really run without asyncio, with the same results as on a loop.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentapps.core.exports import PUBLIC_MODULES, source_of
from agentapps.tools import loopscan
from agentapps.tools.loopscan import needs_loop
from agentapps.tools.loopwaits import WAITS

REPO = Path(__file__).resolve().parents[2]
SKILLS = sorted((REPO / "skills").rglob("*.skill.py"))
OTHERS = sorted((REPO / "examples").rglob("*.skill.py")) + sorted((REPO / ".agent-apps").rglob("*.skill.py"))


def test_the_table_of_modules_that_reach_asyncio_matches_the_code():
    fresh = loopscan.render(loopscan.derive())
    stored = (REPO / "agentapps" / "tools" / "loopwaits.py").read_text(encoding="utf-8")
    assert stored == fresh, ("agentapps/tools/loopwaits.py is out of date with the imports of agentapps: "
                             "run `python -m agentapps.tools.loopscan --write`")


def _imported(source: str) -> list[str]:
    """The modules a skill's source imports, public names as the internal modules they come from."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if node.module in PUBLIC_MODULES:
                    found.append(source_of(node.module, alias.name) or "?")
                elif f"{node.module}.{alias.name}" in WAITS:
                    found.append(f"{node.module}.{alias.name}")
                else:
                    found.append(node.module)
    return found


@pytest.fixture(scope="module")
def graph():
    import grimp

    return grimp.build_graph("agentapps", include_external_packages=True, exclude_type_checking_imports=True)


@pytest.mark.parametrize("path", SKILLS + OTHERS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_shipped_skill_needs_the_loop_exactly_when_its_imports_reach_asyncio(path, graph):
    source = path.read_text(encoding="utf-8")
    reasons = []
    for module in _imported(source):
        if module.split(".")[0] != "agentapps":
            if module.split(".")[0] == "asyncio" or module.split(".")[0] not in sys.stdlib_module_names:
                reasons.append(module)
        elif module not in graph.modules or "asyncio" in graph.find_upstream_modules(module):
            reasons.append(module)
    assert needs_loop(source) is bool(reasons), f"{path.name}: reaches asyncio through {reasons}"


def test_the_pipeline_and_the_everyday_commands_run_without_a_loop():
    """What keeps the cold start: every standard middleware a code skill's call goes through, and
    the skills `run hello`, `list` and `describe` run, are driven without an event loop."""
    loop_free = {p.name.removesuffix(".skill.py") for p in SKILLS if not needs_loop(p.read_text(encoding="utf-8"))}
    assert {"validate-allowed-tools", "validate-args", "trust", "execute", "validate-returns", "directives",
            "agent-execute", "hello", "skill-list", "skill-describe"} <= loop_free
    assert {"shell", "state-get", "event-emit", "agent", "agent-bedrock", "mcp", "session"}.isdisjoint(loop_free)


@pytest.mark.parametrize(("source", "loop"), [
    ("import json, re, time, subprocess, threading\nfrom pathlib import Path\n", False),
    ("from agentapps import ArgsError, directive_target\n", False),
    ("from agentapps.schemas.validation import validate\n", False),
    ("from agentapps.io import read_text\n", False),
    ("import asyncio\n", True),
    ("async def run(ctx, args):\n    import asyncio.subprocess\n", True),
    ("import requests\n", True),
    ("from agentapps.process.shell import run_command\n", True),
    ("from agentapps.runtime import store_for\n", True),
    ("import agentapps.runtime\n", True),  # a whole public module: any of its names may be used
    ("from agentapps.context import manager\n", True),  # a submodule, not the package
    ("from agentapps import bootstrap\n", True),
    ("from agentapps.not_a_module import x\n", True),
    ("from . import x\n", True),
    ("x = __import__('asyncio')\n", True),
    ("import importlib\nm = importlib.import_module('asyncio')\n", True),
    ("def broken(:\n", True),
])
def test_which_sources_need_an_event_loop(source, loop):
    assert needs_loop(source) is loop


# Every bundled skill classified loop-free, called from a code skill: the code skills as a user
# would, the directive skills directly (outside a prompt they insert nothing). `directives` and
# `agent-execute` serve markdown skills only, which always run on a loop, so no run drives them.
MARKDOWN_ONLY = {"directives", "agent-execute"}
HARNESS = '''
from agentapps import AgentAppsError

DIRECTIVE = {"label": "notes.txt", "attrs": {"default": "-"}, "skill": "harness"}
CALLS = [
    ("hello", {"name": "Ada"}), ("file-read", {"path": "notes.txt"}), ("file-write", {"path": "out.txt", "content": "x"}),
    ("file-list", {"glob": "*.txt"}), ("file-search", {"pattern": "note"}), ("skill-file", {}),
    ("skill-list", {"query": "hello"}), ("skill-describe", {"name": "hello"}),
    ("agent-provider", {"prompt": "p", "invokeRef": "i", "hookRef": "h"}), ("directive-base", {}),
    *[(name, DIRECTIVE) for name in ("arg", "config", "context", "env", "inline", "path", "skill")],
    ("hub-list", {}), ("hub-search", {}), ("hub-install", {}), ("hub-update", {}), ("hub-remove", {"name": "x"}),
    ("hub-add", {"name": "x"}), ("hub-add-source", {"source": "./nope"}),
]

frontmatter = {
    "name": "harness",
    "allowed-tools": "hello file-read file-write file-list file-search skill-file skill-list skill-describe agent-provider "
                     "directive-base arg config context env inline path skill hub-list hub-search hub-install "
                     "hub-update hub-remove hub-add hub-add-source",
    "metadata": {"params": {"type": "object"}, "returns": {"type": "object"}},
}

async def run(ctx, args):
    out = {}
    for name, call_args in CALLS:
        try:
            out[name] = await ctx.manager.invoke(name, call_args)
        except AgentAppsError as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    return out
'''

RUNNER = '''
import json, sys
driven = sys.argv[1] == "driven"
if driven:
    sys.modules["asyncio"] = None  # importing it fails: nothing in this run may need a loop
import agentapps.context.calls as calls

ran = set()
call = calls.call_tool

def recording(ctx):
    ran.add(ctx.tool.name)
    return call(ctx)

calls.call_tool = recording
from agentapps.boot import bootstrap
from agentapps.context.manager import invoke_root

coro = invoke_root(bootstrap(), "harness", {})
if driven:
    from agentapps.core.driver import drive
    result = drive(coro)
else:
    import asyncio
    result = asyncio.run(coro)
print(json.dumps({"result": result, "ran": sorted(ran)}))
'''


def test_the_bundled_skills_classified_loop_free_run_without_asyncio_as_they_do_on_a_loop(project):
    project.write("harness.skill.py", HARNESS)
    project.write("notes.txt", "a note\n")
    runs = {}
    for way in ("driven", "loop"):
        done = subprocess.run([sys.executable, "-c", RUNNER, way], cwd=project.root, capture_output=True,
                              text=True, timeout=60, check=False, env=project.env())
        assert done.returncode == 0, f"{way}: {done.stderr}"
        runs[way] = json.loads(done.stdout)
    assert runs["driven"] == runs["loop"]
    result = runs["driven"]["result"]
    assert result["hello"] == "Hello, Ada!" and result["file-read"].startswith("a note")
    loop_free = {p.name.removesuffix(".skill.py") for p in SKILLS if not needs_loop(p.read_text(encoding="utf-8"))}
    assert MARKDOWN_ONLY == {p.name.removesuffix(".skill.py") for p in SKILLS
                             if '"applies-to": "markdown"' in p.read_text(encoding="utf-8")}
    missed = loop_free - MARKDOWN_ONLY - set(runs["driven"]["ran"])
    assert not missed, f"bundled skills classified loop-free that the harness does not call: {sorted(missed)}"
