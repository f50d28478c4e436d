"""The run log's cost per run (target: at most 2 ms).

1. What one `agentapps run` pays, in fresh processes (median of N): a child runs `hello` through
   the CLI's `run_command` with the log off (so everything a run imports is loaded), then times
   `log_run()` once: importing agentapps.runlog and sqlite3, opening the database, one
   transaction with the run and its per-model row, closing. Against an empty log and against one
   that already holds 10 000 runs.
2. The same call repeated in one process, sqlite3 already imported (median of 500).
3. End to end, for information: `agentapps run hello --name Ada` as a fresh process with the log
   on and with `AGENTAPPS_RUN_LOG=off`, alternating (median of N each). The difference is within
   the noise of a process start on a busy machine, which is why the verdict uses (1).

    .venv/bin/python benchmarks/runlog.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import clean_env, console_script, footer, header, median, table, time_process, verdict

CHILD = """
import contextlib, io, os, sys, time
from pathlib import Path
os.chdir(sys.argv[1])
os.environ["AGENTAPPS_RUN_LOG"] = "off"
from agentapps.cli.run import run_command
with contextlib.redirect_stdout(io.StringIO()):
    run_command(["hello", "--name", "Ada"])  # everything a run imports and does, without the log
os.environ["AGENTAPPS_RUN_LOG"] = "on"
from agentapps.runstate import Internals  # loaded by the run above
totals = {
    "usage": {"inputTokens": 1200, "outputTokens": 80}, "cost": 0.0048,
    "models": {"m": {"inputTokens": 1200, "outputTokens": 80, "cost": 0.0048}},
    "turns": 2, "steps": 1, "stop_reason": "answered"}
started = time.perf_counter()
from agentapps.runlog import log_run
row = log_run(Path(".agent-apps"), skill="bench", args={"path": "README.md"}, internals=Internals(),
              totals=totals, exit_code=0, error=None, started=started)
elapsed = time.perf_counter() - started
assert row is not None, "the run was not logged"
print(elapsed)
"""


def fresh(project: Path, env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(project)], env=env, capture_output=True,
                              text=True, check=True)
        out.append(float(proc.stdout.strip()))
    return out


def warm(project: Path, n: int) -> list[float]:
    from agentapps.runlog import log_run
    from agentapps.runstate import Internals

    data = project / ".agent-apps"
    out = []
    for _ in range(n):
        started = time.perf_counter()
        row = log_run(data, skill="bench", args={}, internals=Internals(), exit_code=0, error=None,
                      started=started)
        out.append(time.perf_counter() - started)
        if row is None:
            sys.exit("error: the run was not logged")
    return out


def prefill(project: Path, count: int) -> None:
    import sqlite3

    from agentapps.runlog import log_run
    from agentapps.runstate import Internals

    if log_run(project / ".agent-apps", skill="bench", args={}, internals=Internals(), exit_code=0,
               error=None, started=time.perf_counter()) is None:
        sys.exit("error: the run was not logged")
    conn = sqlite3.connect(project / ".agent-apps" / "runs" / "runs.db")
    with conn:
        conn.executemany("INSERT INTO runs (started_at, skill, exit_code, turns, steps) VALUES (?, ?, 0, 1, 1)",
                         [(time.time() - i, f"skill-{i % 40}") for i in range(count)])
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 processes instead of 30")
    options = parser.parse_args()
    n = 10 if options.quick else 30
    header("The run log: cost per run")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        env = clean_env(home)
        empty, full, cli = base / "empty", base / "full", base / "cli"
        for folder in (empty, full, cli):
            (folder / ".agent-apps").mkdir(parents=True)
        prefill(full, 10_000)
        # the disk's writeback of what this script (and the scripts before it) wrote must not land
        # inside the timings: flush it first
        os.sync()
        first_empty = fresh(empty, env, n)
        first_full = fresh(full, env, n)
        again = warm(full, 500)
        agentapps = str(console_script())
        argv = [agentapps, "run", "hello", "--name", "Ada"]
        for _ in range(2):
            time_process(argv, cwd=cli, env=env)
        on, off = [], []
        for _ in range(n):
            on.append(time_process(argv, cwd=cli, env=env))
            off.append(time_process(argv, cwd=cli, env={**env, "AGENTAPPS_RUN_LOG": "off"}))
    rows = [
        ["log_run() in a fresh process, empty log", f"{median(first_empty) * 1000:.2f} ms"],
        ["log_run() in a fresh process, 10 000 runs logged", f"{median(first_full) * 1000:.2f} ms"],
        ["log_run() again in the same process", f"{median(again) * 1000:.2f} ms"],
        ["agentapps run hello, log on", f"{median(on) * 1000:.1f} ms"],
        ["agentapps run hello, AGENTAPPS_RUN_LOG=off", f"{median(off) * 1000:.1f} ms"],
        ["difference (on - off)", f"{(median(on) - median(off)) * 1000:+.1f} ms"],
    ]
    table(["measure (median)", "time"], rows)
    cost = max(median(first_empty), median(first_full))
    verdict(cost <= 0.002, f"a run pays {cost * 1000:.2f} ms for its record ({cost / median(off) * 100:.1f}% of "
                           f"a {median(off) * 1000:.0f} ms 'run hello') (target <= 2 ms)")
    footer()


if __name__ == "__main__":
    main()
