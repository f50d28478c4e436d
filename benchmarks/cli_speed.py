"""Process start of the everyday commands against `python -c pass` (issue 10's targets).

Each command runs as a fresh process from a folder that fits it, with HOME set to a temporary
folder (the index and code caches live there, so they are warm after the warm-up runs, as on a
user's machine), `python -c pass` running before each of them in the same folder. Warm-up runs
first; then rounds, each running every pair once; the ratio is median / median of the baseline.

| command | folder | target |
|---|---|---|
| `agentapps --help` | empty | <= 8x |
| `agentapps --version` | empty | <= 8x, and no slower than `--help` (<= 1.1x its median: issue 23) |
| `agentapps list` | empty (the bundled skills) | <= 8x |
| `agentapps run --dry-run demo-summarize --path README.md` | a copy of the project's README.md | <= 12x |
| `agentapps run --replay summarize.turns.json summarize --path incident-report.md` | a copy of examples/summarize (its `.agent-apps/`, skill, turns and report) | <= 18x |

`agentapps run hello --name Ada` (<= 6x) is cold_start.py's, with its import profile.

    .venv/bin/python benchmarks/cli_speed.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from _common import (
    REPO,
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

WARMUP = 2


@dataclass
class Command:
    label: str
    args: list[str]
    folder: str  # a key of the folders made by `folders()`
    expect: str  # a piece of the output that shows the command really did its work
    limit: float  # the target ratio to `python -c pass`
    times: list[float] = field(default_factory=list)
    base: list[float] = field(default_factory=list)  # the baseline runs paired with this one


def commands() -> list[Command]:
    return [
        Command("agentapps --help", ["--help"], "empty", "Commands:", 8.0),
        Command("agentapps --version", ["--version"], "empty", "agentapps", 8.0),
        Command("agentapps list", ["list"], "empty", "demo-summarize", 8.0),
        Command(
            "run --dry-run demo-summarize --path README.md",
            ["run", "--dry-run", "demo-summarize", "--path", "README.md"],
            "readme",
            "demo-summarize",
            12.0,
        ),
        Command(
            "run --replay summarize.turns.json summarize (examples/summarize)",
            ["run", "--replay", "summarize.turns.json", "summarize", "--path", "incident-report.md"],
            "summarize",
            "Checkout outage",
            18.0,
        ),
    ]


def folders(tmp: Path) -> dict[str, Path]:
    """An empty folder, one holding a copy of README.md, and a copy of examples/summarize."""
    empty, readme = tmp / "empty", tmp / "readme"
    empty.mkdir()
    readme.mkdir()
    shutil.copy(REPO / "README.md", readme / "README.md")
    summarize = tmp / "summarize"
    # a copy, so the run log the runs write stays out of the checkout
    shutil.copytree(REPO / "examples" / "summarize", summarize)
    return {"empty": empty, "readme": readme, "summarize": summarize}


def check_output(argv: list[str], cwd: Path, env: dict[str, str], expect: str) -> None:
    proc = subprocess.run(
        argv, check=False, cwd=cwd, env=env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0 or expect not in proc.stdout:
        sys.exit(
            f"error: {' '.join(argv[1:])} in {cwd.name}/: rc={proc.returncode}, "
            f"{expect!r} not in stdout {proc.stdout[-300:]!r}, stderr {proc.stderr[-500:]!r}"
        )


def measure(cmds: list[Command], where: dict[str, Path], env: dict[str, str], runs: int) -> None:
    script = str(console_script())
    base_cmd = [sys.executable, "-c", "pass"]
    for cmd in cmds:
        check_output([script, *cmd.args], where[cmd.folder], env, cmd.expect)
    for _ in range(WARMUP):
        for cmd in cmds:
            time_process(base_cmd, cwd=where[cmd.folder], env=env)
            time_process([script, *cmd.args], cwd=where[cmd.folder], env=env)
    for _ in range(runs):  # the baseline right before each command: drift in load hits both alike
        for cmd in cmds:
            cmd.base.append(time_process(base_cmd, cwd=where[cmd.folder], env=env))
            cmd.times.append(time_process([script, *cmd.args], cwd=where[cmd.folder], env=env))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10 rounds instead of 20")
    parser.add_argument("--runs", type=int, help="rounds (default 20, or 10 with --quick)")
    opts = parser.parse_args()
    runs = opts.runs or (10 if opts.quick else 20)

    header("process start of --help, list, run --dry-run and run --replay vs python -c pass")
    cmds = commands()
    with tempfile.TemporaryDirectory(prefix="aa-bench-cli-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        home.mkdir()
        measure(cmds, folders(tmp), clean_env(home), runs)

    base = [t for cmd in cmds for t in cmd.base]
    mb = median(base)
    print()
    rows = [["python -c pass (before each command)", len(base), ms(mb), ms(min(base)), "", ""]]
    for cmd in cmds:
        ratio = median(cmd.times) / mb
        rows.append([cmd.label, runs, ms(median(cmd.times)), ms(min(cmd.times)),
                     f"{ratio:.2f}x", f"<= {cmd.limit:g}x"])
    table(["command", "runs", "median", "min", "ratio", "target"], rows)
    print()
    footer()
    results = []
    for cmd in cmds:
        ratio = median(cmd.times) / mb
        met = target(cmd.label, ratio, cmd.limit,
                     detail=f"{ms(median(cmd.times))} vs {ms(mb)}")
        results.append((cmd, ratio, met))
    by_label = {cmd.label: cmd for cmd in cmds}
    version, helping = by_label["agentapps --version"], by_label["agentapps --help"]
    against_help = median(version.times) / median(helping.times)
    version_met = target("agentapps --version vs agentapps --help", against_help, 1.1,
                         detail=f"{ms(median(version.times))} vs {ms(median(helping.times))}")
    verdict(
        version_met and all(met for _, _, met in results),
        "; ".join(
            f"{cmd.label.split(' (')[0]} {ratio:.2f}x (<= {cmd.limit:g}x {'met' if met else 'missed'})"
            for cmd, ratio, met in results
        ),
    )


if __name__ == "__main__":
    main()
