"""Run every benchmark script in turn and summarise: each script's verdict and key figure, then
every target the scripts printed (`TARGET:` lines) with its figure and "met" or "missed".

Each script runs as `python SCRIPT --quick` (without `--quick` here: its full run), one after
another, from the repository root; its whole output goes to a log folder. A script crashed when
it exited non-zero or printed no `VERDICT:` line; run_all exits 1 if one did, else 0 (a missed
target is a result, not a crash).

    .venv/bin/python benchmarks/run_all.py [--quick] [--only a,b] [--logs DIR] [--timeout S]
                                           [--markdown]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _common import REPO, footer, header, table

HERE = Path(__file__).resolve().parent
# runlog's figure is the disk's own time, so it goes before any script that writes much: the virtual
# disk stays slow for 10-20 s after resolution's 11 000 files or mcp's run (runlog measured
# 3.2-3.4 ms per record right after either, 1.3 ms alone, 2026-11-28); then issue 10's targets
FIRST = ("runlog", "cold_start", "cli_speed", "resolution", "invoke_overhead", "state")
BUDGET_S = 120.0  # issue 10: `run_all.py --quick` in under two minutes
# state.py on h/redis prints its issue 10 figure in its own words; read it until it uses TARGET:
STATE_LINE = re.compile(r"^issue 10 target: (?P<what>.*?) (?P<sign>>=|<=) (?P<limit>\S+) "
                        r"(?P<rest>.*?): (?P<value>\S+), (?P<met>met|missed)$")
EXPECTED = {"state": "state-set on the file store vs plain write + fsync + rename + dir fsync"}


@dataclass
class Outcome:
    name: str
    seconds: float = 0.0
    code: int | None = None
    verdict: str = ""  # PASS, FAIL, N/A, INFO, or CRASH
    text: str = ""
    targets: list[list[str]] = field(default_factory=list)  # [what, figure, limit, met]


def scripts(only: list[str]) -> list[str]:
    names = sorted(p.stem for p in HERE.glob("*.py") if p.stem not in ("_common", "run_all"))
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            sys.exit(f"error: no benchmark script named {', '.join(unknown)} in {HERE}")
        names = [n for n in names if n in only]
    return [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]


def read_output(out: Outcome, stdout: str) -> None:
    """The last VERDICT line and every target line of a script's output."""
    for line in stdout.splitlines():
        if line.startswith("VERDICT:"):
            word, _, text = line[len("VERDICT:"):].strip().partition(" - ")
            out.verdict, out.text = word.strip(), text.strip()
        elif line.startswith("TARGET:"):
            parts = [p.strip() for p in line[len("TARGET:"):].split(" | ")]
            if len(parts) == 4:
                out.targets.append(parts)
        elif (m := STATE_LINE.match(line.strip())) is not None:
            out.targets.append([f"{m['what']} vs {m['rest']}", m["value"],
                                f"{m['sign']} {m['limit']}", m["met"]])


def run_one(name: str, quick: bool, logs: Path, timeout: float) -> Outcome:
    out = Outcome(name)
    argv = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if quick else [])]
    log = logs / f"{name}.log"
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
        stdout, stderr, out.code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        stderr = f"timed out after {timeout:g} s"
    out.seconds = time.perf_counter() - start
    log.write_text(stdout + ("\n--- stderr ---\n" + stderr if stderr else ""), encoding="utf-8")
    read_output(out, stdout)
    if out.code != 0 or not out.verdict:
        why = stderr.strip().splitlines()[-1] if stderr.strip() else "no VERDICT line"
        out.verdict, out.text = "CRASH", f"exit {out.code}: {why}"
    return out


def short(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary(outcomes: list[Outcome], logs: Path) -> None:
    print()
    print(f"Scripts (full output of each in {logs}/):")
    table(["script", "verdict", "key figure (the script's VERDICT line)", "time"],
          [[o.name, o.verdict, short(o.text), f"{o.seconds:.1f} s"] for o in outcomes], left=3)
    rows = []
    for o in outcomes:
        rows += [[o.name, what, figure, limit, met] for what, figure, limit, met in o.targets]
        if not o.targets and o.name in EXPECTED:
            rows.append([o.name, EXPECTED[o.name], "not printed by this state.py", "", "n/a"])
    if rows:
        print()
        print("Targets (as each script printed them; ratios are to a baseline of the same run):")
        table(["script", "target", "figure", "limit", "result"], rows, left=5)


def markdown(outcomes: list[Outcome]) -> None:
    """The targets again as a markdown table, to paste into a README as printed."""
    print()
    print("| script | target | figure | limit | result |")
    print("|---|---|---|---|---|")
    for o in outcomes:
        for what, figure, limit, met in o.targets:
            print(f"| `{o.name}.py` | {what.replace('|', '/')} | {figure} | {limit} | {met} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="run each script with --quick")
    parser.add_argument("--only", default="", help="comma-separated script names (no .py)")
    parser.add_argument("--logs", type=Path, help="folder for each script's output "
                        "(default: a new temporary folder)")
    parser.add_argument("--markdown", action="store_true",
                        help="also print the targets as a markdown table")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds before a script counts as crashed (default 900)")
    opts = parser.parse_args()
    names = scripts([n.strip() for n in opts.only.split(",") if n.strip()])
    logs = opts.logs or Path(tempfile.mkdtemp(prefix="aa-bench-logs-"))
    logs.mkdir(parents=True, exist_ok=True)

    header(f"run_all: {len(names)} benchmark scripts{' with --quick' if opts.quick else ''}")
    start = time.perf_counter()
    outcomes = []
    for name in names:
        outcome = run_one(name, opts.quick, logs, opts.timeout)
        print(f"{name}: {outcome.verdict} in {outcome.seconds:.1f} s", flush=True)
        outcomes.append(outcome)
    total = time.perf_counter() - start
    summary(outcomes, logs)
    if opts.markdown:
        markdown(outcomes)
    print()
    footer()
    crashed = [o.name for o in outcomes if o.verdict == "CRASH"]
    within = "" if not opts.quick else (
        f" (budget {BUDGET_S:g} s: {'met' if total <= BUDGET_S else 'missed'})")
    print(f"total {total:.1f} s{within}; crashed: {', '.join(crashed) or 'none'}")
    sys.exit(1 if crashed else 0)


if __name__ == "__main__":
    main()
