"""`state-set` throughput: one process in process, and 8 contending CLI processes doing CAS.

1. Single process, in a temporary project: a driver code skill times a loop of
   `await ctx.manager.invoke("state-set", {"key", "value", "store"})` over 10 keys, with
   `store: file` (`.agent-apps/state/`: lock file, read, atomic write with two fsyncs) and
   `store: memory`. The same writes straight to `FileStateStore.set` / `MemoryStateStore.set`
   (no pipeline) are the baseline. For comparison it also times an uncontended compare-and-swap
   increment (`state-get` + `state-set` with `expect`, file store). Median of 3 runs (1 with
   `--quick`).
2. Contention: 8 processes of `agentapps run bench-incr` (the console script beside
   `sys.executable`; bytecode allowed as in a real install), each adding 1 to one file-store key
   50 times with `state-get` + `state-set {expect}` and retrying on a conflict. Every worker
   reports ready and then waits for a common start time, so the timed window (first start to last
   finish, measured inside the workers) has all 8 contending; process start-up is outside it (the
   wall time including start-up is shown too). The final value must be exactly 400. 3 runs (1
   with `--quick`); total increments/s, conflicts/s and state-set attempts/s are reported.

Then one in-process run of file-store `state-set` invokes is profiled (top 12 by own time).
Issue 3 sets no target, so the verdict is INFO.

    .venv/bin/python benchmarks/state.py [--quick] [--procs 8] [--times 50]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from _common import (
    clean_env,
    console_script,
    dur,
    footer,
    header,
    median,
    profile_rows,
    table,
)

VALUE = {"status": "running", "step": 3, "owner": "worker-1", "progress": [0.25, 0.5]}

DRIVER = """
import time

frontmatter = {
    "name": "bench-driver",
    "description": "Benchmark: state-set n times (or n CAS increments) through the pipeline.",
    "metadata": {"params": {"type": "object"}},
}


async def run(ctx, args):
    n, store, value = args["n"], args["store"], args["value"]
    invoke = ctx.manager.invoke
    start = time.perf_counter()
    if args.get("cas"):
        for _ in range(n):
            current = await invoke("state-get", {"key": "cas", "store": store})
            await invoke("state-set", {"key": "cas", "value": (current or 0) + 1,
                                       "expect": current, "store": store})
    else:
        for i in range(n):
            await invoke("state-set", {"key": f"job:{i % 10}", "value": value, "store": store})
    return {"seconds": time.perf_counter() - start}
"""

INCR = """
import asyncio
import time

from agentapps.errors import ConflictError

frontmatter = {
    "name": "bench-incr",
    "description": "Benchmark: add 1 to a state key `times` times with CAS, retrying conflicts.",
    "metadata": {"params": {"type": "object", "properties": {
        "key": {"type": "string"}, "times": {"type": "integer"},
        "run": {"type": "string"}, "worker": {"type": "integer"}}}},
}


async def run(ctx, args):
    invoke, key, run_id = ctx.manager.invoke, args["key"], args["run"]
    await invoke("state-set", {"key": f"ready:{run_id}:{args['worker']}", "value": True})
    go = await invoke("state-wait", {"key": f"go:{run_id}", "timeout": 120_000})
    await asyncio.sleep(max(0.0, go - time.time()))  # everyone starts at the same moment
    start = time.time()
    done = conflicts = 0
    while done < args["times"]:
        current = await invoke("state-get", {"key": key})
        try:
            await invoke("state-set", {"key": key, "value": (current or 0) + 1, "expect": current})
        except ConflictError:
            conflicts += 1
            continue
        done += 1
    return {"start": start, "end": time.time(), "conflicts": conflicts}
"""


def make_project(tmp: Path) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    for name, text in (("bench-driver", DRIVER), ("bench-incr", INCR)):
        (project / f"{name}.skill.py").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.chdir(project)
    return project


def pipeline_rate(root, store: str, n: int, cas: bool = False) -> float:
    """Operations per second through ctx.manager.invoke (a CAS increment counts as one)."""
    from agentapps.context.manager import invoke_root

    args = {"n": n, "store": store, "value": VALUE, "cas": cas}
    return n / asyncio.run(invoke_root(root, "bench-driver", args))["seconds"]


def direct_rate(backend, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        backend.set(f"job:{i % 10}", VALUE)
    return n / (time.perf_counter() - start)


def plain_rate(root: Path, n: int) -> float:
    """The baseline of issue 10: write + fsync + rename + directory fsync, nothing else."""
    root.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"key": "job:0", "value": VALUE}).encode()
    start = time.perf_counter()
    for i in range(n):
        path = root / f"job%3A{i % 10}.json"
        tmp = root / f".job%3A{i % 10}.json.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, path)
        dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
    return n / (time.perf_counter() - start)


def atomic_write_rate(root: Path, n: int) -> float:
    """The part of a file-store write done under the lock: write_atomic alone (two fsyncs)."""
    from agentapps.core.atomic import write_atomic

    data = json.dumps({"key": "job:0", "value": VALUE}, indent=2).encode()
    start = time.perf_counter()
    for i in range(n):
        write_atomic(root / f"job%3A{i % 10}.json", data)
    return n / (time.perf_counter() - start)


def paired(rounds: int, batch: int, runs: dict[str, Any]) -> dict[str, list[float]]:
    """Rates of each runner in short batches, the runners taking turns (the first one rotating),
    so a change in the disk's load hits all of them alike; one rate per runner per round."""
    names = list(runs)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            rates[name].append(runs[name](batch))
    return rates


def ratios(a: list[float], b: list[float]) -> list[float]:
    return [x / y for x, y in zip(a, b, strict=True)]


def contended_run(project: Path, env: dict[str, str], run_id: str, procs: int, times: int) -> dict:
    from agentapps.stores.state import FileStateStore

    store = FileStateStore(project / ".agent-apps" / "state")
    key = f"counter:{run_id}"
    argv = [
        str(console_script()),
        "run",
        "bench-incr",
        "--key",
        key,
        "--times",
        str(times),
        "--run",
        run_id,
    ]
    spawned = time.perf_counter()
    children = [
        subprocess.Popen(
            [*argv, "--worker", str(w)],
            cwd=project,
            env=env,
            text=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(procs)
    ]
    try:
        deadline = time.monotonic() + 120
        while len(store.list(f"ready:{run_id}:")) < procs:
            if time.monotonic() > deadline or any(c.poll() is not None for c in children):
                break
            time.sleep(0.01)
        store.set(f"go:{run_id}", time.time() + 0.3)
        outputs = [c.communicate(timeout=300) for c in children]
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
    wall = time.perf_counter() - spawned
    for c, (stdout, stderr) in zip(children, outputs, strict=True):
        if c.returncode != 0:
            sys.exit(f"error: a bench-incr worker exited {c.returncode}: {stderr[-800:]}")
    results = [json.loads(stdout) for stdout, _ in outputs]
    final = store.get(key)
    if final != procs * times:
        sys.exit(f"error: {procs} x {times} CAS increments gave {final}, not {procs * times}")
    window = max(r["end"] for r in results) - min(r["start"] for r in results)
    conflicts = sum(r["conflicts"] for r in results)
    return {
        "window": window,
        "wall": wall,
        "conflicts": conflicts,
        "final": final,
        "ops": procs * times,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 run of each instead of 3")
    parser.add_argument("--procs", type=int, default=8, help="contending processes (default 8)")
    parser.add_argument("--times", type=int, default=50, help="increments per process (default 50)")
    opts = parser.parse_args()
    reps = 1 if opts.quick else 3
    n_file, n_mem = (200, 2000) if opts.quick else (1000, 10_000)

    header(f"state-set throughput: in process, and {opts.procs} processes x {opts.times} CAS")
    rounds, batch = (15, 40) if opts.quick else (40, 50)
    with tempfile.TemporaryDirectory(prefix="aa-bench-state-") as tmp:
        project = make_project(Path(tmp))
        from agentapps.boot import bootstrap
        from agentapps.stores.state import FileStateStore, MemoryStateStore

        root = bootstrap(project)
        pipeline_rate(root, "file", 50)  # warm-up: imports, chain plans, validators
        beside = FileStateStore(project / ".agent-apps" / "state-d")
        vs_plain = paired(rounds, batch, {
            "plain": lambda n: plain_rate(project / ".agent-apps" / "plain", n),
            "pipeline": lambda n: pipeline_rate(root, "file", n),
            "direct": lambda n: direct_rate(beside, n),
        })
        pipeline_rate(root, "memory", 500)
        pipeline_rate(root, "file", 20, cas=True)
        direct_file = FileStateStore(project / ".agent-apps" / "state-direct")
        direct_mem = MemoryStateStore()
        rates: dict[str, list[float]] = {k: [] for k in ("pf", "df", "wa", "pm", "dm", "cas")}
        for _ in range(reps):
            rates["pf"].append(pipeline_rate(root, "file", n_file))
            rates["df"].append(direct_rate(direct_file, n_file))
            rates["wa"].append(atomic_write_rate(project / ".agent-apps" / "atomic", n_file))
            rates["pm"].append(pipeline_rate(root, "memory", n_mem))
            rates["dm"].append(direct_rate(direct_mem, n_mem))
            rates["cas"].append(pipeline_rate(root, "file", n_file // 2, cas=True))

        profiler = cProfile.Profile()
        profiler.enable()
        pipeline_rate(root, "file", n_file // 2)
        profiler.disable()

        env = clean_env(Path(tmp) / "home")
        contended = [
            contended_run(project, env, f"r{r}", opts.procs, opts.times) for r in range(reps)
        ]
        os.chdir(tempfile.gettempdir())

    def rate_row(label: str, key: str, n: int) -> list[str]:
        values = rates[key]
        return [
            label,
            f"{n} x {reps}",
            f"{median(values):,.0f}/s",
            dur(1 / median(values)),
            f"{min(values):,.0f}–{max(values):,.0f}/s",
        ]

    pipeline_ratio = median(ratios(vs_plain["pipeline"], vs_plain["plain"]))
    direct_ratio = median(ratios(vs_plain["direct"], vs_plain["plain"]))
    met = pipeline_ratio >= 0.8
    print()
    print(f"file store vs the plain loop (write + fsync + rename + folder fsync), {rounds} rounds of "
          f"{batch} writes each, taking turns; ratio = median of the per-round ratios")
    table(
        ["writer", "median rate", "per op", "ratio to plain"],
        [
            ["plain loop", f"{median(vs_plain['plain']):,.0f}/s", dur(1 / median(vs_plain["plain"])), "1.00"],
            ["invoke state-set, store: file", f"{median(vs_plain['pipeline']):,.0f}/s",
             dur(1 / median(vs_plain["pipeline"])), f"{pipeline_ratio:.2f}"],
            ["  FileStateStore.set direct", f"{median(vs_plain['direct']):,.0f}/s",
             dur(1 / median(vs_plain["direct"])), f"{direct_ratio:.2f}"],
        ],
    )
    print(f"issue 10 target: state-set on the file store >= 0.8x the plain rate: "
          f"{pipeline_ratio:.2f}x, {'met' if met else 'missed'}")
    print()
    print("single process, in process")
    table(
        ["operation", "ops x runs", "median rate", "per op", "range"],
        [
            rate_row("invoke state-set, store: file", "pf", n_file),
            rate_row("  FileStateStore.set direct (no pipeline)", "df", n_file),
            rate_row("    write_atomic alone (temp, fsync, rename, fsync dir)", "wa", n_file),
            rate_row("invoke state-set, store: memory", "pm", n_mem),
            rate_row("  MemoryStateStore.set direct (no pipeline)", "dm", n_mem),
            rate_row("CAS increment (state-get + state-set expect), file", "cas", n_file // 2),
        ],
    )
    print()
    print(
        f"{opts.procs} processes x {opts.times} CAS increments (agentapps run bench-incr), "
        "window = first start to last finish inside the workers"
    )
    rows = []
    for i, c in enumerate(contended, 1):
        attempts = c["ops"] + c["conflicts"]
        rows.append(
            [
                f"run {i}",
                c["final"],
                f"{c['window']:.2f} s",
                f"{c['ops'] / c['window']:,.0f}/s",
                f"{c['conflicts']} ({c['conflicts'] / c['window']:,.0f}/s)",
                f"{attempts / c['window']:,.0f}/s",
                f"{c['wall']:.2f} s",
            ]
        )
    table(
        [
            "run",
            "final",
            "window",
            "increments",
            "conflicts",
            "state-set attempts",
            "wall incl. start-up",
        ],
        rows,
    )
    med = {k: median([c[k] for c in contended]) for k in ("window", "conflicts", "wall")}
    inc_rate = median([c["ops"] / c["window"] for c in contended])
    conf_rate = median([c["conflicts"] / c["window"] for c in contended])

    print()
    print(
        f"cProfile of {n_file // 2} in-process invokes of state-set (file store), "
        "top 12 by own time:"
    )
    table(
        ["function", "ncalls", "own", "cumulative"],
        profile_rows(pstats.Stats(profiler, stream=sys.stdout), 2, 12),
    )
    print()
    footer()
    print(
        f"VERDICT: {'PASS' if met else 'FAIL'} - state-set on the file store {pipeline_ratio:.2f}x the plain "
        f"write+fsync+rename+fsync loop (target >= 0.8x, {'met' if met else 'missed'}; the store alone "
        f"{direct_ratio:.2f}x); state-set in process: file {median(rates['pf']):,.0f}/s "
        f"(direct store {median(rates['df']):,.0f}/s), memory {median(rates['pm']):,.0f}/s "
        f"(direct {median(rates['dm']):,.0f}/s); {opts.procs} processes x {opts.times} CAS: "
        f"{inc_rate:,.0f} increments/s, {conf_rate:,.0f} conflicts/s, final count exactly "
        f"{opts.procs * opts.times} in {len(contended)} of {len(contended)} runs "
        f"(median window {med['window']:.2f} s)"
    )


if __name__ == "__main__":
    main()
