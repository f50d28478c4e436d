"""Cold start: `agentapps run hello --name Ada` against `python -c pass` (target: ratio <= 6x).

Both commands run as fresh processes from an empty temporary folder with HOME set to another
temporary folder, alternating, after warm-up runs (so .pyc files exist and the OS cache is warm:
this measures interpreter + import + bootstrap + one invoke, not disk reads). Also shows, for
information, the modules whose imports cost the most (`python -X importtime`, cumulative).

    .venv/bin/python benchmarks/cold_start.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from _common import (
    clean_env,
    console_script,
    footer,
    header,
    median,
    ms,
    table,
    target,
    time_process,
    verdict,
)

TARGET_RATIO = 6.0  # issue 10
WARMUP = 2


def importtime(
    script: Path, cwd: Path, env: dict[str, str], runs: int
) -> tuple[list[tuple[str, str, float, float]], float]:
    """Median self/cumulative µs per module over `runs` runs, with the module that first imported
    it, and the median total of the top-level imports."""
    selfs: dict[str, list[int]] = defaultdict(list)
    cums: dict[str, list[int]] = defaultdict(list)
    depth: dict[str, int] = {}
    parent: dict[str, str] = {}
    totals: list[int] = []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", str(script), "run", "hello", "--name", "Ada"],
            check=False,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            sys.exit(f"error: importtime run failed: {proc.stderr[-500:]}")
        total = 0
        pending: dict[int, list[str]] = defaultdict(
            list
        )  # children (finished first) awaiting their parent
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            head, cum_us, name = line.split("|", 2)
            self_us = int(head.split(":", 1)[1])
            stripped = name.rstrip().lstrip()
            level = (len(name.rstrip()) - len(stripped) - 1) // 2
            selfs[stripped].append(self_us)
            cums[stripped].append(int(cum_us))
            depth[stripped] = level
            for child in pending.pop(level + 1, []):
                parent.setdefault(child, stripped)
            pending[level].append(stripped)
            if level == 0:
                total += int(cum_us)
        totals.append(total)
    rows = [
        (name, parent.get(name, "-"), statistics.median(selfs[name]), statistics.median(cums[name]))
        for name in cums
    ]
    rows.sort(key=lambda r: -r[3])
    return rows, statistics.median(totals)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10 runs each instead of 20")
    parser.add_argument(
        "--runs", type=int, help="runs of each command (default 20, or 10 with --quick)"
    )
    opts = parser.parse_args()
    runs = opts.runs or (10 if opts.quick else 20)

    header("cold start: agentapps run hello --name Ada vs python -c pass")
    script = console_script()
    with tempfile.TemporaryDirectory(prefix="aa-bench-cold-") as tmp:
        cwd, home = Path(tmp, "empty"), Path(tmp, "home")
        cwd.mkdir()
        home.mkdir()
        env = clean_env(home)
        base_cmd = [sys.executable, "-c", "pass"]
        app_cmd = [str(script), "run", "hello", "--name", "Ada"]

        out = subprocess.run(
            app_cmd,
            check=False,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if out.returncode != 0 or out.stdout.strip() != "Hello, Ada!":
            sys.exit(
                f"error: unexpected result from {' '.join(app_cmd)}: rc={out.returncode} "
                f"stdout={out.stdout!r} stderr={out.stderr[-500:]!r}"
            )
        for _ in range(WARMUP):
            time_process(base_cmd, cwd=cwd, env=env)
            time_process(app_cmd, cwd=cwd, env=env)

        base: list[float] = []
        app: list[float] = []
        for _ in range(runs):  # alternate so drift in machine load hits both alike
            base.append(time_process(base_cmd, cwd=cwd, env=env))
            app.append(time_process(app_cmd, cwd=cwd, env=env))

        import_runs = 1 if opts.quick else 5
        imports, import_total = importtime(script, cwd, env, import_runs)

    mb, ma = median(base), median(app)
    ratio = ma / mb
    print()
    table(
        ["command", "runs", "median", "min", "max"],
        [
            ["python -c pass", runs, ms(mb), ms(min(base)), ms(max(base))],
            ["agentapps run hello --name Ada", runs, ms(ma), ms(min(app)), ms(max(app))],
            ["ratio (median / median)", "", f"{ratio:.2f}x", "", ""],
        ],
    )
    print()
    print(
        f"Top 8 imports by cumulative time (python -X importtime, median of {import_runs} runs;\n"
        f"all top-level imports together: {import_total / 1000:.1f} ms; importtime adds overhead):"
    )
    table(
        ["module", "imported by", "self", "cumulative"],
        [[name, by, f"{s / 1000:.1f} ms", f"{c / 1000:.1f} ms"] for name, by, s, c in imports[:8]],
    )
    print()
    footer()
    target("agentapps run hello --name Ada vs python -c pass", ratio, TARGET_RATIO,
           detail=f"{ms(ma)} vs {ms(mb)}")
    verdict(
        ratio <= TARGET_RATIO,
        f"cold start {ms(ma)} vs {ms(mb)} for python -c pass = {ratio:.2f}x "
        f"(target <= {TARGET_RATIO:g}x)",
    )


if __name__ == "__main__":
    main()
