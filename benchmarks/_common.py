"""Small helpers shared by the benchmark scripts (standard library only)."""

from __future__ import annotations

import os
import platform
import pstats
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def console_script(name: str = "agentapps") -> Path:
    """The console script installed in the same environment as this interpreter (not resolved)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        sys.exit(
            f"error: no '{name}' console script beside {sys.executable}; install the project first."
        )
    return path


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment minus AGENTAPPS_*/AWS_* variables, with HOME set to `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTAPPS_", "AWS_"))}
    # a real install has bytecode (pip compiles it); measuring without it times the compiler instead
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(HOME=str(home), NO_COLOR="1")
    env.update(extra)
    return env


def time_process(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], check: bool = True
) -> float:
    """Wall-clock seconds for one run of argv (output discarded)."""
    start = time.perf_counter()
    proc = subprocess.run(
        argv,
        check=False,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    elapsed = time.perf_counter() - start
    if check and proc.returncode != 0:
        sys.exit(
            f"error: {' '.join(map(str, argv))} exited {proc.returncode}: "
            f"{proc.stderr.decode()[-500:]}"
        )
    return elapsed


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine() -> str:
    return (
        f"{platform.system()} {platform.machine()}, nproc={os.cpu_count()}, "
        f"Python {platform.python_version()} ({sys.executable})"
    )


def revision() -> str:
    """The checkout being measured: commit, and how many kernel/skill files differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "agentapps", "skills"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"commit {head}" + (
        f" + {len(dirty)} uncommitted paths in agentapps/ and skills/" if dirty else ""
    )


def header(title: str) -> None:
    print(f"# {title}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S %Z')} | {machine()}")
    print(f"# {revision()}")
    print(f"# load average at start: {load()}")


def footer() -> None:
    print(f"# load average at end: {load()}")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, left: int = 1) -> None:
    """Print a plain aligned table (the first `left` columns left-aligned, the others
    right-aligned)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    print(fmt(cells[0]))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(fmt(row))


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def dur(seconds: float) -> str:
    """Milliseconds, or microseconds below one millisecond."""
    return ms(seconds) if seconds >= 1e-3 else f"{seconds * 1e6:.1f} µs"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def target(what: str, value: float, limit: float, *, at_most: bool = True, unit: str = "x",
           detail: str = "", digits: int = 2) -> bool:
    """Print one target of an issue as a line run_all.py collects, and return whether it is met:
    `TARGET: <what> | <value><unit> (<detail>) | <= <limit><unit> | met|missed`."""
    met = value <= limit if at_most else value >= limit
    shown = f"{value:.{digits}f}{unit}" + (f" ({detail})" if detail else "")
    sign = "<=" if at_most else ">="
    print(f"TARGET: {what} | {shown} | {sign} {limit:g}{unit} | {'met' if met else 'missed'}")
    return met


def verdict(ok: bool | None, text: str) -> None:
    """The final line: PASS, FAIL, or N/A when the run could not judge the target."""
    word = "N/A" if ok is None else "PASS" if ok else "FAIL"
    print(f"VERDICT: {word} - {text}")


def short(filename: str) -> str:
    """A profiled file name without the repository, site-packages or stdlib prefix."""
    for prefix, label in (
        (str(REPO) + os.sep, ""),
        (sysconfig.get_paths()["purelib"] + os.sep, "site-packages/"),
        (sysconfig.get_paths()["stdlib"] + os.sep, "stdlib/"),
    ):
        if filename.startswith(prefix):
            return label + filename[len(prefix) :]
    return filename if "/" not in filename else "…/" + "/".join(filename.split("/")[-2:])


def profile_rows(
    stats: pstats.Stats, key: int, limit: int, *, harness: Sequence[str] = (), runs: int = 1
) -> list[list[str]]:
    """Top `limit` functions by stats column `key` (2 own, 3 cumulative), per run; files whose
    path contains one of `harness` (the loop and the script itself) are left out."""
    entries = sorted(stats.stats.items(), key=lambda kv: -kv[1][key])  # type: ignore[attr-defined]
    if harness:
        entries = [
            e
            for e in entries
            if not any(h in e[0][0] for h in harness) and "_contextvars.Context" not in e[0][2]
        ]
    rows = []
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _c) in entries[:limit]:
        where = func if filename == "~" else f"{short(filename)}:{line}({func})"
        rows.append([where, f"{ncalls / runs:g}", f"{tottime * 1000 / runs:.1f} ms",
                     f"{cumtime * 1000 / runs:.1f} ms"])
    return rows
