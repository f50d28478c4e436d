"""Is the agent loop linear? Per-turn cost and memory at 10, 100 and 1,000 turns (issue 23).

Markdown skills played by `agent-scripted` (no model, no network) whose script has T turns, each
running trivial agent code (`return 1` plus a comment naming the turn: the loop guard stops a run
that sends identical code three times in a row), then a final text turn. T = 1 is the fixed cost (the run, its first snippet and the sandbox
process that snippet starts). Per turn = (median(T) - median(1)) / (T - 1), each run through `invoke_root` in this process, the sizes
interleaved round robin. Memory: `tracemalloc`'s peak during one run of each size, per turn,
against the characters of the conversation the run builds (its history grows with T, so memory per
turn may not grow faster than the history per turn).

Targets (issue 23): per-turn time at 1,000 turns <= 1.3x the figure at 10 turns; memory per turn at
1,000 turns <= 1.3x the figure at 100 (the first hundred turns include the run's fixed allocations).

    .venv/bin/python benchmarks/agent_loop.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from _common import dur, footer, header, median, table, target, verdict

SIZES = (10, 100, 1000)
LIMIT = 1.3


def make_project(tmp: Path) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    model = {"agent": "agent-scripted", "maxTurns": 2000, "maxSteps": 2000}
    for t in (1, *SIZES):
        turns = [{"code": f"return 1; // turn {i + 1}"} for i in range(t)] + [{"text": "done"}]
        (project / f"turns-{t}.turns.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
        meta = {"model": {**model, "script": f"turns-{t}.turns.json"}}
        (project / f"turns-{t}.skill.md").write_text(
            f"---\nname: turns-{t}\ndescription: Return 1 {t} times.\nmetadata: {json.dumps(meta)}\n---\n"
            f"Return 1 {t} times, then say done.\n", encoding="utf-8")
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.environ["AGENTAPPS_RUN_LOG"] = "off"
    os.chdir(project)
    return project


def one_run(runner: asyncio.Runner, root, t: int) -> float:
    from agentapps.context.manager import invoke_root

    start = time.perf_counter()
    result = runner.run(invoke_root(root, f"turns-{t}", {}))
    elapsed = time.perf_counter() - start
    if result != "done":
        sys.exit(f"error: turns-{t} returned {result!r}")
    return elapsed


def peak_bytes(runner: asyncio.Runner, root, t: int) -> int:
    tracemalloc.start()
    try:
        one_run(runner, root, t)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    quick = parser.parse_args().quick
    reps = {1: 12, 10: 12, 100: 6, 1000: 3} if quick else {1: 30, 10: 30, 100: 12, 1000: 7}

    header("agent loop: per-turn time and memory at 10, 100 and 1,000 turns")
    with tempfile.TemporaryDirectory(prefix="aa-bench-loop-") as tmp_name:
        make_project(Path(tmp_name))
        from agentapps.boot import bootstrap

        root = bootstrap(Path.cwd())
        with asyncio.Runner() as runner:
            for t in (1, *SIZES):  # warm-up: imports, the sandbox, the index
                one_run(runner, root, t)
            times: dict[int, list[float]] = {t: [] for t in (1, *SIZES)}
            for i in range(max(reps.values())):  # round robin, the small sizes more often
                for t in (1, *SIZES):
                    if i < reps[t]:
                        times[t].append(one_run(runner, root, t))
            base_peak = peak_bytes(runner, root, 1)
            peaks = {t: peak_bytes(runner, root, t) for t in SIZES}
        os.chdir(tempfile.gettempdir())

    fixed = median(times[1])
    per_turn = {t: (median(times[t]) - fixed) / (t - 1) for t in SIZES}
    per_turn_mem = {t: (peaks[t] - base_peak) / (t - 1) for t in SIZES}
    table(["turns", "run (median)", "per turn", "peak memory", "memory per turn"],
          [["T = 1 (fixed)", dur(fixed), "", f"{base_peak / 1024:.0f} KiB", ""]]
          + [[f"T = {t}", dur(median(times[t])), dur(per_turn[t]), f"{peaks[t] / 1024:.0f} KiB",
              f"{per_turn_mem[t] / 1024:.1f} KiB"] for t in SIZES])
    time_ratio = per_turn[SIZES[-1]] / per_turn[SIZES[0]]
    mem_ratio = per_turn_mem[SIZES[-1]] / per_turn_mem[SIZES[1]]
    print()
    footer()
    if per_turn[SIZES[0]] <= 0:  # the sandbox start of T = 1 varied more than nine turns cost
        verdict(None, f"too noisy: T = {SIZES[0]} took no longer than T = 1; run it again on a quiet machine")
        return
    ok = [target(f"per-turn time at {SIZES[-1]} turns vs at {SIZES[0]}", time_ratio, LIMIT),
          target(f"memory per turn at {SIZES[-1]} turns vs at {SIZES[1]}", mem_ratio, LIMIT)]
    verdict(all(ok), f"per turn {dur(per_turn[SIZES[0]])} at {SIZES[0]} turns, {dur(per_turn[SIZES[-1]])} "
            f"at {SIZES[-1]} ({time_ratio:.2f}x); memory per turn {per_turn_mem[SIZES[1]] / 1024:.1f} KiB at "
            f"{SIZES[1]}, {per_turn_mem[SIZES[-1]] / 1024:.1f} KiB at {SIZES[-1]} ({mem_ratio:.2f}x)")


if __name__ == "__main__":
    main()
