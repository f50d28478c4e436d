"""What the shell skill's subreaper costs: `run_command` against spawning `/bin/sh -c` directly.

Prints the median time of a trivial command (`true`) both ways and their ratio. Standard library
plus agentapps only; run with the project's interpreter: `python benchmarks/shell.py`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentapps.process.shell import minimal_env, run_command

ROUNDS = 40


async def _direct() -> None:
    proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", "true", stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, start_new_session=True)
    await proc.communicate()


async def _reaped() -> None:
    await run_command("true", cwd=Path.cwd(), env=minimal_env([]), timeout=10)


async def _median(fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main() -> None:
    direct = await _median(_direct)
    reaped = await _median(_reaped)
    print(f"sh -c true, spawned directly (baseline): {direct * 1000:.1f} ms")
    print(f"sh -c true, under the subreaper:          {reaped * 1000:.1f} ms")
    print(f"ratio: {reaped / direct:.1f}x the baseline ({(reaped - direct) * 1000:.1f} ms more per call)")


if __name__ == "__main__":
    asyncio.run(main())
