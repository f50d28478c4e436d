"""Does a code skill need an event loop? Decided from the modules its source imports (anywhere in it).

Only asyncio runs an event loop, so code that never imports it, directly or through what it
imports, never waits on one. A skill therefore needs the loop when its source imports asyncio, a
library outside the standard one (we do not read its imports: in doubt, the loop), a part of
agentapps that reaches asyncio, or a module named at run time (`__import__`, `import_module`, a
relative import). A public name (`from agentapps.io import fetch`) counts as the internal module
it comes from; a whole public module (`import agentapps.io`) as all of them. A skill that needs no
loop is driven without one (core/driver.py), and a callee that needs one gets it when it is called.

Which parts of agentapps reach asyncio is not kept by hand: `WAITS` (tools/loopwaits.py) is derived
by `derive()` from the import graph, reading every import at any depth, inside functions too (as
the layer contract does), and counting a library outside the standard one as waiting when importing it imports asyncio.
tests/core/test_loopscan.py fails when `WAITS` no longer matches the code; regenerate it with
`python -m agentapps.tools.loopscan --write`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentapps.core.exports import PUBLIC_MODULES, source_of
from agentapps.tools.loopwaits import WAITS

LOOP = "asyncio"  # the standard library's one module that runs a loop
DYNAMIC = frozenset({"__import__", "import_module"})  # a module named at run time: in doubt, the loop


def _waits(name: str) -> bool:
    root = name.split(".", 1)[0]
    if root == "agentapps":
        return WAITS.get(name, True)  # a module the graph does not know: in doubt, the loop
    return root == LOOP or root not in sys.stdlib_module_names


def _from_waits(module: str, names: list[str]) -> bool:
    """`from module import names`: each name as the module it is, or as the module that holds it."""
    if module in PUBLIC_MODULES:
        return any(_waits(source_of(module, name) or "?") for name in names)
    if module.split(".", 1)[0] != "agentapps":
        return _waits(module)
    return _waits(module) or any(WAITS.get(f"{module}.{name}", False) for name in names)


def needs_loop(source: str) -> bool:
    """Whether a skill with this source must run on an event loop (True when in doubt)."""
    import ast  # only when a code skill is read from its file (the index keeps the answer)

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(_waits(alias.name) for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module is None or _from_waits(node.module, [a.name for a in node.names]):
                return True
        elif isinstance(node, ast.Call):
            called = node.func
            if (called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute)
                    else None) in DYNAMIC:
                return True
    return False


def derive() -> dict[str, bool]:
    """For each module of agentapps: whether what it imports, at any depth, reaches asyncio. A public
    module reaches what its names come from. Needs grimp (import-linter's graph builder)."""
    from importlib import import_module

    import grimp

    graph = grimp.build_graph("agentapps", include_external_packages=True, exclude_type_checking_imports=True)
    ours = sorted(m for m in graph.modules if m.split(".", 1)[0] == "agentapps")
    upstream = {module: [m for m in graph.find_upstream_modules(module) if m.split(".", 1)[0] != "agentapps"]
                for module in ours}
    libraries = sorted({name for reached in upstream.values() for name in reached
                        if name != LOOP and name not in sys.stdlib_module_names})
    outside = dict(zip(libraries, _import_loops(libraries), strict=True))
    outside[LOOP] = True
    waits = {module: any(outside.get(name, False) for name in reached) for module, reached in upstream.items()}
    for public in PUBLIC_MODULES:
        table: dict[str, str] = import_module(public)._EXPORTS
        waits[public] = any(waits.get(target.partition(":")[0], True) for target in table.values())
    return waits


# Each library is imported in a child forked from one fresh interpreter that has imported nothing
# else, so one library's imports never hide another's, as many fresh interpreters would answer; the
# children run side by side, one per CPU. A library that fails to import counts as waiting (in
# doubt, the loop).
_PROBE = """
import os, sys
names, running, codes = sys.argv[1:], {}, {}
for index, name in enumerate(names + [None] * len(names)):
    if name is None or len(running) >= (os.cpu_count() or 1):
        if running:
            pid, status = os.wait()
            codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
        if name is None:
            continue
    pid = os.fork()
    if pid == 0:
        try:
            __import__(name)
        except BaseException:
            os._exit(2)
        os._exit(int("asyncio" in sys.modules))
    running[pid] = index
print(*(codes[i] for i in range(len(names))))
"""


def _import_loops(names: list[str]) -> list[bool]:
    """For each library outside agentapps and the standard one: does importing it import asyncio?"""
    import subprocess

    if not names:
        return []
    done = subprocess.run([sys.executable, "-c", _PROBE, *names], capture_output=True, text=True, check=True,
                          timeout=120)
    codes = done.stdout.split()
    if len(codes) != len(names):
        raise RuntimeError(f"the import probe answered for {len(codes)} of {len(names)} libraries: {done.stderr}")
    return [code != "0" for code in codes]


HEADER = '''"""Generated by `python -m agentapps.tools.loopscan --write` from the import graph: do not edit.

Each module of agentapps, and whether it reaches asyncio through its imports (tools/loopscan.py).
`STAMP` changes with the table; the skill index keeps each skill's answer under it.
"""

'''


def render(waits: dict[str, bool]) -> str:
    import hashlib
    import json

    rows = "".join(f"    {json.dumps(name)}: {value},\n" for name, value in sorted(waits.items()))
    stamp = hashlib.sha256(rows.encode()).hexdigest()[:12]
    return f"{HEADER}STAMP = {json.dumps(stamp)}\nWAITS = {{\n{rows}}}\n"


def main(argv: list[str]) -> int:
    text = render(derive())
    target = Path(__file__).with_name("loopwaits.py")
    if argv == ["--write"]:
        target.write_text(text, encoding="utf-8")
        return 0
    return 0 if target.read_text(encoding="utf-8") == text else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
