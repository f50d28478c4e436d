"""Resolution at scale: name lookup, `which` and `list` in projects of 1 000 and 10 000 skills.

Generates a temporary project per size: 70% `NAME.skill.md` with a small frontmatter, 20%
`NAME.skill.py`, 10% folder skills `NAME/SKILL.md`, spread over 100 sub-folders. Measures in
process: bootstrap + the first `lookup.find(name)` (which scans and loads the index), a repeated
`find` of a random name (median of 1 000), `catalog.which` (what `agentapps which` does after
bootstrap) repeated, and `lookup.list_all()`; and as fresh processes: `agentapps which NAME` and
`agentapps list` (median of 5). Target: a repeated lookup <= 5 ms at 10 000 skills.

    .venv/bin/python benchmarks/resolution.py [--quick] [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

from _common import (
    clean_env,
    console_script,
    dur,
    footer,
    header,
    median,
    percentile,
    table,
    time_process,
    verdict,
)

TARGET_MS = 5.0
FOLDERS = 100

MD = """---
name: {name}
description: Benchmark skill {i}, a markdown prompt in {folder}.
metadata:
  tags: [bench, {folder}]
  params:
    type: object
    properties:
      text: {{type: string}}
---
Summarise the text for skill {i}.
"""

PY = """frontmatter = {{
    "name": "{name}",
    "description": "Benchmark skill {i}, a code skill in {folder}.",
    "metadata": {{
        "tags": ["bench", "{folder}"],
        "params": {{"type": "object", "properties": {{"x": {{"type": "integer"}}}}}},
    }},
}}


def run(ctx, args):
    return args.get("x")
"""

FOLDER_SKILL = """---
name: {name}
description: Benchmark skill {i}, an Agent Skills folder in {folder}.
---
Instructions for skill {i}.
"""


def generate(project: Path, n: int) -> list[str]:
    """Write n skills (7:2:1 markdown, python, folder) over FOLDERS sub-folders; return names."""
    (project / ".agent-apps").mkdir(parents=True)
    names = []
    for i in range(n):
        name, folder = f"s{i:05d}", f"group-{i % FOLDERS:03d}"
        directory = project / folder
        directory.mkdir(exist_ok=True)
        kind = i % 10
        if kind < 7:
            (directory / f"{name}.skill.md").write_text(
                MD.format(name=name, i=i, folder=folder), encoding="utf-8"
            )
        elif kind < 9:
            (directory / f"{name}.skill.py").write_text(
                PY.format(name=name, i=i, folder=folder), encoding="utf-8"
            )
        else:
            (directory / name).mkdir()
            (directory / name / "SKILL.md").write_text(
                FOLDER_SKILL.format(name=name, i=i, folder=folder), encoding="utf-8"
            )
        names.append(name)
    return names


def in_process(
    project: Path, names: list[str], cold_reps: int, lookups: int, list_reps: int
) -> dict[str, object]:
    from agentapps.boot import bootstrap
    from agentapps.tools.catalog import which

    rng = random.Random(1234)
    cold: list[float] = []
    for _ in range(cold_reps):
        name = rng.choice(names)
        start = time.perf_counter()
        lookup = bootstrap(project).globals.lookup
        tool = lookup.find(name)
        cold.append(time.perf_counter() - start)
        assert tool.name == name

    finds: list[float] = []
    for _ in range(lookups):
        name = rng.choice(names)
        start = time.perf_counter()
        tool = lookup.find(name)
        finds.append(time.perf_counter() - start)
        assert tool.name == name

    whiches: list[float] = []
    for _ in range(lookups):
        name = rng.choice(names)
        start = time.perf_counter()
        rows = which(lookup, name)
        whiches.append(time.perf_counter() - start)
        assert len(rows) == 1, rows

    lists: list[float] = []
    for _ in range(list_reps):
        start = time.perf_counter()
        tools, problems = lookup.list_all()
        lists.append(time.perf_counter() - start)
        assert len(tools) >= len(names) and not problems, problems[:3]
    return {"cold": cold, "finds": finds, "whiches": whiches, "lists": lists}


def as_processes(project: Path, home: Path, names: list[str], reps: int) -> dict[str, list[float]]:
    script = str(console_script())
    env = clean_env(home)
    name = names[len(names) // 2]
    check = subprocess.run(
        [script, "which", name], check=False, cwd=project, env=env, capture_output=True, text=True
    )
    assert check.returncode == 0 and name in check.stdout, (
        check.returncode,
        check.stdout,
        check.stderr[-300:],
    )
    check = subprocess.run(
        [script, "list"], check=False, cwd=project, env=env, capture_output=True, text=True
    )
    assert check.returncode == 0 and len(check.stdout.splitlines()) >= len(names), check.stderr[
        -300:
    ]
    out: dict[str, list[float]] = {"which": [], "list": []}
    for _ in range(reps):
        out["which"].append(time_process([script, "which", name], cwd=project, env=env))
        out["list"].append(time_process([script, "list"], cwd=project, env=env))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repetitions (cold 1, lookups 200, processes 2)"
    )
    parser.add_argument(
        "--sizes", default="1000,10000", help="comma-separated project sizes (default 1000,10000)"
    )
    opts = parser.parse_args()
    sizes = [int(s) for s in opts.sizes.split(",") if s.strip()]
    cold_reps, lookups, list_reps, proc_reps = (1, 200, 2, 2) if opts.quick else (3, 1000, 5, 5)

    header("resolution at scale: lookup, which and list")
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    results: dict[int, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="aa-bench-resolution-") as tmp:
        home = Path(tmp, "home")
        home.mkdir()
        os.environ["HOME"] = str(home)
        import yaml  # noqa: F401  (imported once up front so the first cold run does not pay for it)

        for n in sizes:
            project = Path(tmp, f"proj-{n}")
            start = time.perf_counter()
            names = generate(project, n)
            print(f"generated {n} skills in {time.perf_counter() - start:.1f} s", flush=True)
            results[n] = in_process(project, names, cold_reps, lookups, list_reps)
            results[n].update(as_processes(project, home, names, proc_reps))

    def col(n: int, key: str, stat: str = "median") -> str:
        values = results[n][key]  # type: ignore[assignment]
        if stat == "p95":
            return dur(percentile(values, 95))  # type: ignore[arg-type]
        if stat == "max":
            return dur(max(values))  # type: ignore[arg-type]
        return dur(median(values))  # type: ignore[arg-type]

    print()
    rows = [
        [f"bootstrap + first find (cold index), median of {cold_reps}"]
        + [col(n, "cold") for n in sizes],
        [f"repeated find, median of {lookups}"] + [col(n, "finds") for n in sizes],
        [f"repeated find, p95 of {lookups}"] + [col(n, "finds", "p95") for n in sizes],
        [f"repeated find, max of {lookups}"] + [col(n, "finds", "max") for n in sizes],
        [f"repeated catalog.which (force_check), median of {lookups}"]
        + [col(n, "whiches") for n in sizes],
        [f"lookup.list_all(), median of {list_reps}"] + [col(n, "lists") for n in sizes],
        [f"process: agentapps which NAME, median of {proc_reps}"]
        + [col(n, "which") for n in sizes],
        [f"process: agentapps list, median of {proc_reps}"] + [col(n, "list") for n in sizes],
    ]
    table(["measure"] + [f"{n} skills" for n in sizes], rows)
    print()
    footer()
    biggest = max(sizes)
    repeated = median(results[biggest]["finds"]) * 1000  # type: ignore[arg-type]
    verdict(
        None if biggest < 10_000 else repeated <= TARGET_MS,
        f"repeated lookup {repeated:.3f} ms at {biggest} skills "
        f"(target <= {TARGET_MS:g} ms at 10000)",
    )


if __name__ == "__main__":
    main()
