"""Is the agent loop linear? Per-turn cost and memory at 10, 100 and 1,000 turns (issue 23).

Markdown skills played by `agent-scripted` (no model, no network) whose script has T turns, each
running trivial agent code (`return 1` plus a comment naming the turn: the loop guard stops a run
that sends identical code three times in a row), then a final text turn. Each run goes through
`invoke_root` in this process, the sizes interleaved round robin. Per turn: a reporter (as the CLI's
progress display is one) notes the clock at every `turn-end`, and a run's per-turn time is
(last code turn's end - first turn's end) / (T - 1), so it holds turns 2..T only: not the run's
fixed cost, nor the sandbox process its first snippet starts (whose start time varies by more than
nine turns cost, which made a figure at 10 turns from whole-run times unreliable). The figure at a
size is the median over its runs. Memory: `tracemalloc`'s peak during one run of each size, per turn,
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


def one_run(runner: asyncio.Runner, root, t: int) -> tuple[float, float]:
    """The run's wall time, and its time per turn over turns 2..t (0 for t = 1)."""
    from agentapps.context.manager import invoke_root

    ends: list[float] = []

    def report(name: str, data: dict) -> None:
        if name == "turn-end":
            ends.append(time.perf_counter())

    root.globals.internals.reporter = report
    start = time.perf_counter()
    result = runner.run(invoke_root(root, f"turns-{t}", {}))
    elapsed = time.perf_counter() - start
    if result != "done":
        sys.exit(f"error: turns-{t} returned {result!r}")
    if len(ends) != t + 1:  # t code turns and the final text turn
        sys.exit(f"error: turns-{t} reported {len(ends)} turn-end events, expected {t + 1}")
    return elapsed, (ends[t - 1] - ends[0]) / (t - 1) if t > 1 else 0.0


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
    reps = {1: 6, 10: 12, 100: 6, 1000: 3} if quick else {1: 30, 10: 30, 100: 12, 1000: 7}  # T = 1: no target

    header("agent loop: per-turn time and memory at 10, 100 and 1,000 turns")
    with tempfile.TemporaryDirectory(prefix="aa-bench-loop-") as tmp_name:
        make_project(Path(tmp_name))
        from agentapps.boot import bootstrap

        root = bootstrap(Path.cwd())
        with asyncio.Runner() as runner:
            for t in (1, *SIZES):  # warm-up: imports, the sandbox, the index
                one_run(runner, root, t)
            times: dict[int, list[float]] = {t: [] for t in (1, *SIZES)}
            turns: dict[int, list[float]] = {t: [] for t in SIZES}
            for i in range(max(reps.values())):  # round robin, the small sizes more often
                for t in (1, *SIZES):
                    if i < reps[t]:
                        elapsed, per = one_run(runner, root, t)
                        times[t].append(elapsed)
                        if t > 1:
                            turns[t].append(per)
            base_peak = peak_bytes(runner, root, 1)
            peaks = {t: peak_bytes(runner, root, t) for t in SIZES}
        os.chdir(tempfile.gettempdir())

    fixed = median(times[1])
    per_turn = {t: median(turns[t]) for t in SIZES}
    per_turn_mem = {t: (peaks[t] - base_peak) / (t - 1) for t in SIZES}
    table(["turns", "run (median)", "per turn", "peak memory", "memory per turn"],
          [["T = 1 (fixed)", dur(fixed), "", f"{base_peak / 1024:.0f} KiB", ""]]
          + [[f"T = {t}", dur(median(times[t])), dur(per_turn[t]), f"{peaks[t] / 1024:.0f} KiB",
              f"{per_turn_mem[t] / 1024:.1f} KiB"] for t in SIZES])
    time_ratio = per_turn[SIZES[-1]] / per_turn[SIZES[0]]
    mem_ratio = per_turn_mem[SIZES[-1]] / per_turn_mem[SIZES[1]]
    print()
    footer()
    ok = [target(f"per-turn time at {SIZES[-1]} turns vs at {SIZES[0]}", time_ratio, LIMIT),
          target(f"memory per turn at {SIZES[-1]} turns vs at {SIZES[1]}", mem_ratio, LIMIT)]
    verdict(all(ok), f"per turn {dur(per_turn[SIZES[0]])} at {SIZES[0]} turns, {dur(per_turn[SIZES[-1]])} "
            f"at {SIZES[-1]} ({time_ratio:.2f}x); memory per turn {per_turn_mem[SIZES[1]] / 1024:.1f} KiB at "
            f"{SIZES[1]}, {per_turn_mem[SIZES[-1]] / 1024:.1f} KiB at {SIZES[-1]} ({mem_ratio:.2f}x)")


if __name__ == "__main__":
    main()
