"""What the shell skill's subreaper costs: `run_command` against spawning `/bin/sh -c` directly.

Prints the median time of a trivial command (`true`) both ways (40 runs each, 15 with `--quick`)
and their ratio. Standard library plus agentapps only; no target (the verdict is INFO).

    .venv/bin/python benchmarks/shell.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from _common import REPO, footer, header

sys.path.insert(0, str(REPO))

from agentapps.process.shell import minimal_env, run_command


async def _direct() -> None:
    proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", "true", stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, start_new_session=True)
    await proc.communicate()


async def _reaped() -> None:
    await run_command("true", cwd=Path.cwd(), env=minimal_env([]), timeout=10)


async def _median(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def measure(rounds: int) -> tuple[float, float]:
    return await _median(_direct, rounds), await _median(_reaped, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="15 runs of each instead of 40")
    rounds = 15 if parser.parse_args().quick else 40
    header("shell: run_command under the subreaper vs /bin/sh -c spawned directly")
    direct, reaped = asyncio.run(measure(rounds))
    print(f"sh -c true, spawned directly (baseline): {direct * 1000:.1f} ms (median of {rounds})")
    print(f"sh -c true, under the subreaper:          {reaped * 1000:.1f} ms (median of {rounds})")
    print(f"ratio: {reaped / direct:.1f}x the baseline ({(reaped - direct) * 1000:.1f} ms more per call)")
    footer()
    print(f"VERDICT: INFO - a command under the subreaper {reaped * 1000:.1f} ms vs "
          f"{direct * 1000:.1f} ms spawned directly = {reaped / direct:.1f}x (no target)")


if __name__ == "__main__":
    main()
