"""What a `shell` command costs: the subreaper, and the OS sandbox (bubblewrap) on top of it.

All in one process and one run, the variants taking turns round by round (40 rounds, 15 with
`--quick`), medians of a trivial command (`true`):
  1. `/bin/sh -c true` spawned directly with asyncio (the baseline);
  2. `run_command` (the per-command subreaper, `reaper.py`), no sandbox;
  3. `run_command` inside the sandbox (its `Sandbox` prepared once);
  4. a `shell` skill call through the whole pipeline in a temporary project whose main skill says
     `sandbox: off`, and 5. the same with `sandbox: auto`, which per call also finds the project's
     protected paths and starts bwrap.
For information, the protected-path search alone on this repository (median of 20; 5 with --quick).
Standard library plus agentapps only; no target (the verdict is INFO; N/A where bwrap cannot run).

    .venv/bin/python benchmarks/shell.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import REPO, footer, header

sys.path.insert(0, str(REPO))

from agentapps.boot import bootstrap
from agentapps.context.manager import invoke_root
from agentapps.files.sandboxing import prepare, protected_paths
from agentapps.process.sandbox import Sandbox, unavailable_reason
from agentapps.process.shell import minimal_env, run_command

MAIN = "---\nname: main\nmetadata:\n  role: main\n  sandbox: {mode}\n---\nBenchmark project.\n"


async def _direct() -> None:
    proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", "true", stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, start_new_session=True)
    await proc.communicate()


def _project(base: Path, mode: str) -> Any:
    """A temporary project (a main skill, a few skills in folders) and the root context of a run in it."""
    root = base / mode
    (root / ".agent-apps").mkdir(parents=True)
    (root / "main.skill.md").write_text(MAIN.format(mode=repr(mode)))
    for i in range(5):
        (root / "skills" / f"s{i}").mkdir(parents=True)
        (root / "skills" / f"s{i}" / "SKILL.md").write_text(f"---\nname: s{i}\n---\nA skill.\n")
        (root / "src" / f"m{i}").mkdir(parents=True)
        (root / "src" / f"m{i}" / "code.py").write_text("x = 1\n")
    return bootstrap(root)


def _variants(base: Path, sandbox: Sandbox | None) -> dict[str, Callable[[], Awaitable[Any]]]:
    env = minimal_env([])
    off, auto = _project(base, "off"), _project(base, "auto")
    variants: dict[str, Callable[[], Awaitable[Any]]] = {
        "direct": _direct,
        "reaper": lambda: run_command("true", cwd=Path.cwd(), env=env, timeout=10),
        "skill-off": lambda: invoke_root(off, "shell", {"command": "true"}),
    }
    if sandbox is not None:
        variants["reaper+sandbox"] = lambda: run_command("true", cwd=Path(sandbox.root), env=env, timeout=10,
                                                         sandbox=sandbox)
        variants["skill-auto"] = lambda: invoke_root(auto, "shell", {"command": "true"})
    return variants


async def measure(rounds: int, variants: dict[str, Callable[[], Awaitable[Any]]]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():  # warm-up: imports, the first bwrap probe
        await fn()
    for _ in range(rounds):
        for name, fn in variants.items():
            started = time.perf_counter()
            await fn()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def _search_cost(repeats: int) -> tuple[float, int]:
    root = str(REPO.resolve())
    times, found = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        found = len(protected_paths(root))
        times.append(time.perf_counter() - started)
    return statistics.median(times), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="15 rounds instead of 40")
    quick = parser.parse_args().quick
    rounds = 15 if quick else 40
    header("shell: the subreaper and the OS sandbox vs /bin/sh -c spawned directly")
    reason = unavailable_reason()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sandbox = None if reason else prepare("required", "benchmark", base, network=False)
        got = asyncio.run(measure(rounds, _variants(base, sandbox)))
    ms = {name: value * 1000 for name, value in got.items()}
    print(f"sh -c true, spawned directly (baseline):            {ms['direct']:.1f} ms (median of {rounds})")
    print(f"run_command, subreaper only:                        {ms['reaper']:.1f} ms")
    print(f"a shell skill call, pipeline included, sandbox: off  {ms['skill-off']:.1f} ms")
    if reason:
        print(f"the sandbox cannot run here: {reason}")
        footer()
        print(f"VERDICT: N/A - the sandbox cannot run here ({reason}); a command under the subreaper "
              f"{ms['reaper']:.1f} ms vs {ms['direct']:.1f} ms spawned directly")
        return
    search, found = _search_cost(5 if quick else 20)
    print(f"run_command, subreaper + sandbox:                   {ms['reaper+sandbox']:.1f} ms")
    print(f"a shell skill call, pipeline included, sandbox: auto {ms['skill-auto']:.1f} ms")
    print(f"protected-path search of this repository:           {search * 1000:.1f} ms ({found} paths, median)")
    command_ratio = got["reaper+sandbox"] / got["reaper"]
    call_ratio = got["skill-auto"] / got["skill-off"]
    print(f"ratio, command with/without the sandbox: {command_ratio:.2f}x "
          f"(+{ms['reaper+sandbox'] - ms['reaper']:.1f} ms per command)")
    print(f"ratio, shell skill call sandbox auto/off: {call_ratio:.2f}x "
          f"(+{ms['skill-auto'] - ms['skill-off']:.1f} ms per call)")
    footer()
    print(f"VERDICT: INFO - a shell call {ms['skill-auto']:.1f} ms in the sandbox vs {ms['skill-off']:.1f} ms "
          f"without = {call_ratio:.2f}x; the command alone {command_ratio:.2f}x "
          f"({ms['reaper+sandbox']:.1f} vs {ms['reaper']:.1f} ms; bare sh {ms['direct']:.1f} ms); no target")


if __name__ == "__main__":
    main()
