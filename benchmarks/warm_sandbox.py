"""The first snippet of an agent run in a long-lived host (serve, mcp-server, worker, the REPL),
against mini-racer in the host's own process (issue 23).

  in-process MiniRacer  `MiniRacer()` and `eval("1")` in this process: a new context and its first
                        evaluation, what a host without a sandbox process would pay;
  warm sandbox          `Sandbox()` and `run("return 1")` after `pool.keep_warm()`, as those hosts
                        set it: the sandbox process was started as a spare before the run began
                        (0.3 s between runs, as between requests);
  cold sandbox          the same without keep_warm: a new process per run (what `agentapps run` does).
Median of N each, taking turns, the sandboxes on one event loop (as in a host).

Target: warm sandbox <= 1.5x in-process MiniRacer.

    .venv/bin/python benchmarks/warm_sandbox.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _common import dur, footer, header, median, table, target, verdict

LIMIT = 1.5
PAUSE_S = 0.3


async def nothing(name: str, args: object) -> object:
    return None


def mini_racer() -> float:
    from py_mini_racer import MiniRacer

    start = time.perf_counter()
    ctx = MiniRacer()
    assert ctx.eval("1") == 1
    elapsed = time.perf_counter() - start
    ctx.close()
    return elapsed


def sandbox(runner: asyncio.Runner, warm: bool) -> float:
    from agentapps.sandbox import Sandbox, pool

    pool.keep_warm(warm)
    if warm:  # the previous run's take started the spare; give it the time between requests
        with Sandbox() as first:
            runner.run(first.run("return 0", nothing))
        time.sleep(PAUSE_S)
    start = time.perf_counter()
    with Sandbox() as box:
        result = runner.run(box.run("return 1", nothing))
        elapsed = time.perf_counter() - start
    assert result.value == 1, result.error
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 runs of each (default 30)")
    runs = 10 if parser.parse_args().quick else 30
    header("first snippet of a run: warm sandbox process vs in-process MiniRacer")
    times: dict[str, list[float]] = {"in-process MiniRacer": [], "warm sandbox": [], "cold sandbox": []}
    mini_racer()
    with asyncio.Runner() as runner:  # one event loop, as in a host
        for _ in range(runs):
            times["in-process MiniRacer"].append(mini_racer())
            times["warm sandbox"].append(sandbox(runner, True))
            times["cold sandbox"].append(sandbox(runner, False))
    base = median(times["in-process MiniRacer"])
    table(["path", f"median of {runs}", "min", "ratio"],
          [[name, dur(median(v)), dur(min(v)), f"{median(v) / base:.2f}x"] for name, v in times.items()])
    footer()
    warm = median(times["warm sandbox"])
    ok = target("first snippet, warm sandbox vs in-process MiniRacer", warm / base, LIMIT,
                detail=f"{dur(warm)} vs {dur(base)}")
    verdict(ok, f"warm {dur(warm)}, cold {dur(median(times['cold sandbox']))}, in-process MiniRacer {dur(base)}: "
                f"warm = {warm / base:.2f}x")


if __name__ == "__main__":
    main()
