"""The sandbox behind a process boundary (issue 9 §4): what the boundary costs agent code, and what
the host process pays while agent code bombs memory.

The baseline is the in-process engine as it was before the boundary: its modules are taken from
git (`--baseline`, default 74a3821) into a temporary package, `baseline_sandbox`, that only this
script imports. Both run in the same run, alternating, so load on the machine hits both.

1. One `ctx.manager.invoke` from agent code, through the full pipeline. A driver code skill opens
   a Sandbox whose invoke is the agent's own bridge (`agentapps.agent.code.bridge`) from an
   untrusted code context with allowed-tools `noop`, as an agent run does. A snippet awaits
   `ctx.manager.invoke('noop', {x: i})` 200 times in sequence, minus the same loop over
   `Promise.resolve(i)`; and a `Promise.all` of 50, minus 50 resolved promises. 7 rounds (3 with
   `--quick`) of 3 snippets each after a warm-up, the engine that goes first alternating; the
   median per invoke. Targets: sequential ≤ 250 µs; Promise.all no slower than the baseline.
2. First snippet, in fresh processes (10 each, 4 with `--quick`, alternating, median), timed
   inside the process. (a) An agent run (agent-scripted, whose first turn is `return 1`), from
   `invoke_root` to that snippet's result, both under today's runner, which creates the Sandbox
   before planning. The baseline's `Sandbox()` blocks until its isolate is open, so its first
   snippet comes after the same serial sum (isolate + planning) as under its own runner, which
   opened the isolate after planning (that runner no longer runs on today's kernel); the
   boundary's process starts while planning goes on. (b) In a
   process that has imported asyncio and the sandbox package: from `Sandbox()` to the result of a
   first `return 1` sent at once. Target: (a) no slower than the baseline; (b) is for information
   (both engines spend about the same CPU to start V8, so it depends on a free core), as are the
   same in a process that already ran one (a sub-agent's case) and the first snippet sent 150 ms
   after `Sandbox()` (a model call in between); with `--quick` only (a) runs. The fastest run of
   each is shown too.
3. Host peak RSS under memory bombs. One fresh process per bomb runs `Sandbox()` (default limits,
   10 s timeout) and the bomb, and reports its own peak RSS (`ru_maxrss` of RUSAGE_SELF: the host,
   not the sandbox process) and the snippet's error type. The ratio is to the same process running
   `return 1`. Target: ≤ 1.25x for every bomb (the host does not grow with agent code). For
   information, the baseline engine in the same conditions (it may die with the host: the exit
   status is shown; not with `--quick`, where its bombs alone take about 15 s).

    .venv/bin/python benchmarks/sandbox.py [--quick] [--baseline REV]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from _common import REPO, clean_env, footer, header, median, table, us, verdict

PACKAGE_FILES = ("__init__.py", "engine.py", "isolate.py", "results.py", "snippet.py", "prelude.js")
SEQ_N, ALL_N = 200, 50
BOMBS = {
    "idle: return 1": "return 1",
    '"x".repeat(2**28)': 'return "x".repeat(2 ** 28)',
    "eval('x=1;'.repeat(2**25))": "eval('x=1;'.repeat(2 ** 25))",
    "new Array(2**27).fill(1)": "return new Array(2 ** 27).fill(1).length",
    '"x".repeat(2**27).repeat(4)': 'return "x".repeat(2 ** 27).repeat(4).length',
    "string doubling loop": "let s = 'x'; for (;;) s += s",
    "JSON.parse of 1e7-deep nesting": "return JSON.parse('['.repeat(1e7) + ']'.repeat(1e7))",
    "Array.from({length: 1e9})": "return Array.from({length: 1e9}).length",
    "heap bomb (push loop)": "const a = []; for (;;) a.push(JSON.stringify('x'.repeat(1 << 16) "
                             "+ a.length))",
}

NOOP = """
frontmatter = {
    "name": "noop",
    "description": "Benchmark: returns its argument.",
    "metadata": {"params": {"type": "object", "properties": {"x": {"type": "integer"}}}},
}


def run(ctx, args):
    return args["x"]
"""

DRIVER = """
import importlib
import time

from agentapps.agent.code import bridge
from agentapps.agent.scope import code_context, code_policies

frontmatter = {
    "name": "bench-boundary",
    "description": "Benchmark: invoke round trips from agent code, one Sandbox implementation.",
    "metadata": {"params": {"type": "object"}},
}

SEQ = "let s = 0; for (let i = 0; i < %d; i++) s += await %s; return s;"
ALL = ("const r = await Promise.all(Array.from({length: %d}, (_, i) => %s));"
       " return r.reduce((a, b) => a + b, 0);")
INVOKE = "ctx.manager.invoke('noop', {x: i})"
PLAIN = "Promise.resolve(i)"


async def run(ctx, args):
    impl = importlib.import_module(args["impl"])
    n, width = args["n"], args["width"]
    invoke = bridge(code_context(ctx, code_policies(ctx, "noop", "bench-boundary")))
    out = {}
    with impl.Sandbox(impl.SandboxLimits(max_invokes=max(n, width) + 10)) as sandbox:
        for rep in range(args["reps"] + 1):  # the first is a warm-up
            for key, code, count in (("seq", SEQ % (n, INVOKE), n), ("seq plain", SEQ % (n, PLAIN), n),
                                     ("all", ALL % (width, INVOKE), width),
                                     ("all plain", ALL % (width, PLAIN), width)):
                start = time.perf_counter()
                result = await sandbox.run(code, invoke)
                elapsed = time.perf_counter() - start
                if not result.ok or result.value != count * (count - 1) // 2:
                    raise RuntimeError(f"{key}: {result.error} value={result.value!r}")
                if rep:
                    out.setdefault(key, []).append(elapsed)
    return out
"""

FIRST = """
import asyncio, importlib, json, sys, time
impl = importlib.import_module(sys.argv[1])
delay = float(sys.argv[2])
if delay < 0:  # an agent run, from its start to the result of agent-scripted's first code turn
    import agentapps.agent.runner
    import agentapps.sandbox
    from agentapps.boot import bootstrap
    from agentapps.context.manager import invoke_root

    marks = []

    class Timed(impl.Sandbox):
        async def run(self, code, invoke):
            result = await super().run(code, invoke)
            marks.append(time.perf_counter())
            return result

        if not hasattr(impl.Sandbox, "set_timeout"):  # the baseline, under today's runner

            def __init__(self, limits=impl.SandboxLimits(), memory=None, *, middleware=False):
                assert not middleware, "the baseline engine cannot run middleware agents"
                super().__init__(limits, memory)

            def set_timeout(self, seconds):  # its limits were fixed at start
                from dataclasses import replace

                self._limits = replace(self._limits, timeout_s=seconds)

    agentapps.sandbox.Sandbox = Timed  # what the runner imports when the agent starts
    from pathlib import Path

    root = bootstrap(Path(sys.argv[4]))
    with asyncio.Runner() as runner:
        for _ in range(int(sys.argv[3])):
            marks.clear()
            start = time.perf_counter()
            assert runner.run(invoke_root(root, "first-code", {})) == "done"
            print(json.dumps(marks[0] - start), flush=True)
    sys.exit(0)


async def nothing(name, args):
    raise RuntimeError("no invokes here")


async def first():
    start = time.perf_counter()
    sandbox = impl.Sandbox()
    if delay:
        await asyncio.sleep(delay)
    result = await sandbox.run("return 1", nothing)
    elapsed = time.perf_counter() - start - delay
    sandbox.close()
    assert result.ok and result.value == 1, result
    return elapsed


runner = asyncio.Runner()
for _ in range(int(sys.argv[3])):
    print(json.dumps(runner.run(first())), flush=True)
"""

BOMB = """
import asyncio, importlib, json, resource, sys, time
impl = importlib.import_module(sys.argv[1])


async def nothing(name, args):
    raise RuntimeError("no invokes here")


async def main():
    with impl.Sandbox(impl.SandboxLimits(timeout_s=10)) as sandbox:
        start = time.perf_counter()
        result = await sandbox.run(sys.argv[2], nothing)
        elapsed = time.perf_counter() - start
        after = await sandbox.run("return 'alive'", nothing)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with open("/proc/self/status") as status:  # this process's own high-water mark, for a check
        hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    print(json.dumps({"peak_mib": peak / 1024, "hwm_mib": hwm / 1024, "s": elapsed,
                      "after": after.value, "type": "ok" if result.ok else result.error["type"]}))


asyncio.run(main())
"""


def baseline_package(tmp: Path, rev: str) -> Path:
    """The sandbox package at `rev`, importable as `baseline_sandbox` from the returned folder."""
    folder = tmp / "baseline" / "baseline_sandbox"
    folder.mkdir(parents=True)
    for name in PACKAGE_FILES:
        text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:agentapps/sandbox/{name}"],
                              check=True, capture_output=True, text=True).stdout
        if name.endswith(".py"):
            text = text.replace("agentapps.sandbox", "baseline_sandbox")
        (folder / name).write_text(text, encoding="utf-8")
    return folder.parent


def make_project(tmp: Path) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    for name, source in (("noop", NOOP), ("bench-boundary", DRIVER)):
        (project / f"{name}.skill.py").write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    turns = {"turns": [{"code": "return 1"}, {"text": "done"}]}
    (project / "first-code.turns.json").write_text(json.dumps(turns), encoding="utf-8")
    model = {"agent": "agent-scripted", "script": "first-code.turns.json"}
    (project / "first-code.skill.md").write_text(
        f"---\nname: first-code\ndescription: A benchmark with one code turn.\n"
        f"metadata: {json.dumps({'model': model})}\n---\nReturn 1, then say done.\n",
        encoding="utf-8")
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.chdir(project)
    return project


def round_trips(project: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Per-invoke seconds, sequential and Promise.all, for each implementation."""
    from agentapps.boot import bootstrap
    from agentapps.context.manager import invoke_root

    root = bootstrap(project)
    out: dict[str, dict[str, list[float]]] = {}
    with asyncio.Runner() as runner:
        for i in range(rounds):
            order = ("baseline_sandbox", "agentapps.sandbox")
            for impl in order if i % 2 else order[::-1]:  # who goes first alternates
                t = runner.run(invoke_root(root, "bench-boundary",
                                           {"impl": impl, "n": SEQ_N, "width": ALL_N, "reps": 3}))
                per = out.setdefault(impl, {"seq": [], "all": []})
                for seq, seq_plain, all_, all_plain in zip(
                        t["seq"], t["seq plain"], t["all"], t["all plain"], strict=True):
                    per["seq"].append((seq - seq_plain) / SEQ_N)
                    per["all"].append((all_ - all_plain) / ALL_N)
    return out


def child(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def first_snippets(tmp: Path, project: Path, env: dict[str, str], processes: int, targeted_only: bool = False
                   ) -> dict[str, list[float]]:
    """Seconds from Sandbox() to the first result: in an agent run, alone (fresh and in a warm
    process), and after a delay (`targeted_only`: the agent run alone, the one with a target)."""
    script = tmp / "first.py"
    script.write_text(FIRST, encoding="utf-8")
    out: dict[str, list[float]] = {}
    for i in range(processes + 1):  # the first round warms the OS cache and bytecode
        for impl in ("baseline_sandbox", "agentapps.sandbox"):
            kinds = (("agent", -1.0, 2),) if targeted_only else (("agent", -1.0, 2), ("fresh", 0.0, 2),
                                                                 ("delayed", 0.15, 1))
            for kind, delay, count in kinds:
                proc = child([str(script), impl, str(delay), str(count), str(project)], env, project)
                if proc.returncode != 0:
                    sys.exit(f"error: first-snippet process failed: {proc.stderr[-800:]}")
                times = [json.loads(line) for line in proc.stdout.splitlines()]
                if i:
                    out.setdefault(f"{impl} {kind}", []).append(times[0])
                    if kind in ("fresh", "agent"):
                        out.setdefault(f"{impl} {kind} warm", []).append(times[1])
    return out


def bombs(tmp: Path, env: dict[str, str], only_current: bool) -> dict[str, dict[str, object]]:
    script = tmp / "bomb.py"
    script.write_text(BOMB, encoding="utf-8")
    out: dict[str, dict[str, object]] = {}
    for label, code in BOMBS.items():
        for impl in ("agentapps.sandbox",) if only_current else ("agentapps.sandbox",
                                                                 "baseline_sandbox"):
            try:
                proc = child([str(script), impl, code], env, tmp, timeout=90)
            except subprocess.TimeoutExpired:
                out[f"{impl} {label}"] = {"died": "no answer in 90 s"}
                continue
            if proc.returncode == 0:
                out[f"{impl} {label}"] = json.loads(proc.stdout)
            else:
                out[f"{impl} {label}"] = {"died": f"host exit {proc.returncode}"}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="fewer repetitions, and no baseline bombs")
    parser.add_argument("--baseline", default="74a3821", help="git revision of the old engine")
    parser.add_argument("--no-baseline-bombs", action="store_true",
                        help="skip the baseline engine's bombs (they can take minutes and GBs)")
    opts = parser.parse_args()
    rounds, processes = (3, 4) if opts.quick else (7, 10)

    header("sandbox: the process boundary's cost, and the host under memory bombs")
    print(f"# baseline: the in-process engine at {opts.baseline}")
    with tempfile.TemporaryDirectory(prefix="aa-bench-sandbox-") as tmp_name:
        tmp = Path(tmp_name)
        sys.path.insert(0, str(baseline_package(tmp, opts.baseline)))
        env = clean_env(tmp / "home", PYTHONPATH=os.pathsep.join(
            [str(tmp / "baseline"), str(REPO)]))
        # first, while this process is small: a child's ru_maxrss starts from its parent's
        # high-water mark at fork (Linux keeps it across exec)
        bombed = bombs(tmp, env, opts.no_baseline_bombs or opts.quick)
        project = make_project(tmp)
        trips = round_trips(project, rounds)
        first = first_snippets(tmp, project, env, processes, targeted_only=opts.quick)

    base, cur = trips["baseline_sandbox"], trips["agentapps.sandbox"]
    seq_b, seq_c = median(base["seq"]), median(cur["seq"])
    all_b, all_c = median(base["all"]), median(cur["all"])
    print(f"\n1. One ctx.manager.invoke('noop') from agent code, full pipeline "
          f"(median of {rounds} x 3 snippets, per invoke)")
    rows = [
        [f"{SEQ_N} sequential", us(seq_b), us(seq_c), f"{seq_c / seq_b:.2f}x",
         "≤ 250 µs: " + ("met" if seq_c <= 250e-6 else "missed")],
        [f"Promise.all of {ALL_N}", us(all_b), us(all_c), f"{all_c / all_b:.2f}x",
         "≤ 1.0x: " + ("met" if all_c <= all_b else "missed")],
    ]
    table(["", "baseline", "boundary", "ratio", "target"], rows)

    print(f"\n2. First snippet: Sandbox() to the first `return 1` result (median of {processes})")
    rows = []
    met_first = True
    for kind, what, targeted in (
            ("agent", "agent run start to first result, fresh process", True),
            ("fresh", "Sandbox() then the snippet at once, fresh process", False),
            ("agent warm", "agent run, in a process that already ran one", False),
            ("fresh warm", "Sandbox() then the snippet, warm process", False),
            ("delayed", "fresh, snippet sent 150 ms after Sandbox()", False)):
        if f"agentapps.sandbox {kind}" not in first:  # an information row, not run with --quick
            rows.append([what, "", "", "", "(not with --quick)", ""])
            continue
        b, c = median(first[f"baseline_sandbox {kind}"]), median(first[f"agentapps.sandbox {kind}"])
        if targeted:
            met_first &= c <= b
        target = ("≤ 1.0x: " + ("met" if c <= b else "missed")) if targeted else "(info)"
        fastest = f"{min(first[f'baseline_sandbox {kind}']) * 1000:.1f} / " \
                  f"{min(first[f'agentapps.sandbox {kind}']) * 1000:.1f} ms"
        rows.append([what, f"{b * 1000:.1f} ms", f"{c * 1000:.1f} ms", f"{c / b:.2f}x", target,
                     fastest])
    table(["", "baseline", "boundary", "ratio", "target", "fastest (baseline / boundary)"], rows)

    print("\n3. Host peak RSS (ru_maxrss of the host process) while each bomb runs")
    idle = bombed["agentapps.sandbox idle: return 1"]
    idle_mib = float(idle["peak_mib"])  # type: ignore[arg-type]
    rows = []
    met_rss = True
    for label in BOMBS:
        got = bombed[f"agentapps.sandbox {label}"]
        if "died" in got:
            met_rss = False
            rows.append([label, str(got["died"]), "", "", "missed", ""])
            continue
        ratio = float(got["peak_mib"]) / idle_mib  # type: ignore[arg-type]
        ok = ratio <= 1.25 and got["after"] == "alive"
        met_rss &= ok
        old = bombed.get(f"baseline_sandbox {label}", {"died": "skipped"})
        old_text = (str(old["died"]) if "died" in old
                    else f"{float(old['peak_mib']):.0f} MiB, {old['type']}")  # type: ignore[arg-type]
        rows.append([label, f"{float(got['peak_mib']):.0f} MiB", f"{ratio:.2f}x",  # type: ignore[arg-type]
                     f"{got['type']} in {float(got['s']):.2f} s",  # type: ignore[arg-type]
                     "≤ 1.25x: " + ("met" if ok else "missed"), old_text])
    table(["bomb", "host peak", "vs idle", "snippet", "target", "baseline engine (info)"], rows)
    print("host peak: ru_maxrss of the process that ran Sandbox(); its VmHWM agreed within "
          f"{max(abs(float(v['peak_mib']) - float(v['hwm_mib'])) for v in bombed.values() if 'died' not in v):.1f} MiB")  # type: ignore[arg-type]
    footer()
    parts = {"sequential ≤ 250 µs": seq_c <= 250e-6, "Promise.all no slower than the baseline": all_c <= all_b,
             "first snippet no slower than the baseline": met_first, "host RSS under bombs ≤ 1.25x idle": met_rss}
    ok = all(parts.values())
    said = "; ".join(f"{name}: {'met' if met else 'missed'}" for name, met in parts.items())
    verdict(ok, f"sequential {us(seq_c)} (baseline {us(seq_b)}), Promise.all {us(all_c)} "
                f"(baseline {us(all_b)}), first snippet "
                f"{median(first['agentapps.sandbox agent']) * 1000:.1f} ms in an agent run "
                f"(baseline {median(first['baseline_sandbox agent']) * 1000:.1f} ms); {said}")


if __name__ == "__main__":
    main()
