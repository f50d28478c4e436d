"""Resolution at scale: lookup, `which`, `list`, `run` and `check` in projects of 1 000, 10 000 and
(not with --quick) 50 000 skills.

Generates a temporary project per size: 70% `NAME.skill.md` with a small frontmatter, 20%
`NAME.skill.py`, 10% folder skills `NAME/SKILL.md`, spread over 100 sub-folders. Measures in
process: bootstrap + the first `lookup.find(name)` (which scans and loads the index), a repeated
`find` of a random name (median of 1 000), `catalog.which` (what `agentapps which` does after
bootstrap) repeated, and `lookup.list_all()`. Then as fresh processes, with HOME shared so the
on-disk index cache is warm (each command runs once before timing), the sizes taking turns:
`agentapps which NAME`, `agentapps list`, `agentapps run CODE-SKILL --x 3` (a `.skill.py` from
the middle of the project; median of 10) and `agentapps check` (median of 5).

The markdown skills declare params and use a directive (`:arg[text]`), as real ones do, and all but
the first hundred inherit (`$inherit`) from the markdown skill heading their folder. The index
cache is trusted by what changed on disk, not by its age, so a "warm" command is also the first one
after any idle time. `check` keeps each skill's findings beside the index (agentapps/check/cache.py),
so besides the warm `check` (nothing changed) two more rows show its other cases: one skill edited
before each run (a folder's head, so the 1% of skills inheriting from it are checked again too),
and nothing kept (the kept findings deleted before each run, as on the very first check). With
--quick every count is smaller, and the rows without a target are timed fewer times still (`which`
3 times, the two other `check` cases once).

Targets: warm `run` at 10 000 / at 1 000 <= 1.3x, warm `list` 10 000 / 1 000 <= 2.5x, warm `check`
at 10 000 <= 1 s (issues 10 and 23); a repeated lookup <= 5 ms at 10 000 (issue 2); at 50 000
skills `list` <= 0.5 s and `check` <= 4 s (issue 23).

    .venv/bin/python benchmarks/resolution.py [--quick] [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
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
    target,
    time_process,
    verdict,
)

TARGET_MS = 5.0  # issue 2: a repeated lookup in one process
RUN_RATIO = 1.3  # issue 10: warm `run` of one code skill, 10 000 vs 1 000 skills
LIST_RATIO = 2.5  # issue 10: warm `list`, 10 000 vs 1 000 skills
CHECK_S = 1.0  # issue 10: warm `check` at 10 000 skills
LIST_50K_S = 0.5  # issue 23: `list` at 50 000 skills
CHECK_50K_S = 4.0  # issue 23: `check` at 50 000 skills
FOLDERS = 100

MD = """---
name: {name}
description: Benchmark skill {i}, a markdown prompt in {folder}.
metadata:
  tags: [bench, {folder}]{inherit}
  params:
    type: object
    properties:
      text: {{type: string}}
---
Summarise this text for skill {i}: :arg[text]
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
            inherit = f"\n  $inherit: s{i % FOLDERS:05d}" if i >= FOLDERS else ""
            (directory / f"{name}.skill.md").write_text(
                MD.format(name=name, i=i, folder=folder, inherit=inherit), encoding="utf-8"
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


def code_skill(names: list[str]) -> str:
    """A `.skill.py` skill from the middle of the project (generate() writes i % 10 in 7, 8 so)."""
    return names[(len(names) // 2) // 10 * 10 + 7]


def process_commands(names: list[str]) -> dict[str, tuple[list[str], str]]:
    """What each fresh process runs, and a piece of its output that shows it did the work."""
    which, skill = names[len(names) // 2], code_skill(names)
    return {
        "which": (["which", which], which),
        "list": (["list"], names[-1]),
        "run": (["run", skill, "--x", "3"], "3"),
        "check": (["check"], f"checked {len(names)} skills: 0 errors"),
        "check-edited": (["check"], f"checked {len(names)} skills: 0 errors"),
        "check-cold": (["check"], f"checked {len(names)} skills: 0 errors"),
    }


def before(key: str, project: Path, home: Path, rep: int) -> None:
    """What happens before a timed command: `check-edited` edits skill s00050 (the head of its
    folder, inherited by the rest of the folder's markdown skills; saved a minute before), `check-cold` deletes the
    findings `check` kept."""
    if key == "check-edited":
        path = project / f"group-{50 % FOLDERS:03d}" / "s00050.skill.md"
        text = MD.format(name="s00050", i=50, folder=f"group-{50 % FOLDERS:03d}", inherit="")
        path.write_text(text.replace("Summarise", "Summarise" + "!" * (rep % 2 + 1)), encoding="utf-8")
        past = time.time() - 60 - rep  # saved a minute ago: `check` keeps no finding of a file
        os.utime(path, (past, past))  # younger than 2 s (its next edit could keep the same mtime)
    elif key == "check-cold":  # this project's only: the other sizes share HOME
        from agentapps.check.cache import kept_file

        os.environ["HOME"] = str(home)
        kept = kept_file(project.resolve())
        assert kept is not None and kept.exists(), kept
        kept.unlink()


def as_processes(
    projects: dict[int, tuple[Path, list[str]]], home: Path, reps: dict[str, int]
) -> dict[int, dict[str, list[float]]]:
    """Fresh processes with a warm index cache (HOME is shared; the first run of each command
    fills the cache), the sizes taking turns so drift in load hits all alike. `reps`: how many
    timed runs of each command."""
    script = str(console_script())
    env = clean_env(home)
    out: dict[int, dict[str, list[float]]] = {}
    for n, (project, names) in projects.items():
        out[n] = {key: [] for key in process_commands(names)}
        commands = {tuple(args): expect for args, expect in process_commands(names).values()}
        for args, expect in commands.items():  # each command once (the three checks are one)
            check = subprocess.run(
                [script, *args], check=False, cwd=project, env=env, capture_output=True, text=True
            )
            if check.returncode != 0 or expect not in check.stdout:
                sys.exit(
                    f"error: agentapps {' '.join(args)} at {n} skills: rc={check.returncode}, "
                    f"{expect!r} not in {check.stdout[-300:]!r}; stderr {check.stderr[-300:]!r}"
                )
    for rep in range(max(reps.values())):
        for n, (project, names) in projects.items():
            for key, (args, _) in process_commands(names).items():
                if rep < reps[key]:
                    before(key, project, home, rep)
                    out[n][key].append(time_process([script, *args], cwd=project, env=env))
    return out


def report_targets(sizes: list[int], procs: dict[int, dict[str, list[float]]],
                   finds_ms: float) -> bool | None:
    """Issue 10's three targets at 10 000 skills (None when the sizes do not allow them)."""
    results = [target("repeated lookup at 10 000 skills (issue 2)", finds_ms, TARGET_MS, unit=" ms",
                      digits=3)]
    if 1000 in sizes:
        for key, limit in (("run", RUN_RATIO), ("list", LIST_RATIO)):
            big, small = median(procs[10_000][key]), median(procs[1000][key])
            what = "warm `run` of one code skill" if key == "run" else "warm `list`"
            results.append(target(f"{what}, 10 000 vs 1 000 skills", big / small, limit,
                                  detail=f"{dur(big)} vs {dur(small)}"))
    check = median(procs[10_000]["check"])
    results.append(target("warm `check` at 10 000 skills", check, CHECK_S, unit=" s"))
    if 50_000 in sizes:
        results.append(target("`list` at 50 000 skills", median(procs[50_000]["list"]), LIST_50K_S, unit=" s"))
        results.append(target("`check` at 50 000 skills", median(procs[50_000]["check"]), CHECK_50K_S, unit=" s"))
    return all(results) if 1000 in sizes else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="fewer repetitions (cold 1, lookups 200, processes 7, check 3)"
    )
    parser.add_argument(
        "--sizes", default=None,
        help="comma-separated project sizes (default 1000,10000,50000; with --quick 1000,10000)"
    )
    opts = parser.parse_args()
    chosen = opts.sizes or ("1000,10000" if opts.quick else "1000,10000,50000")
    sizes = sorted({int(s) for s in chosen.split(",") if s.strip()})
    cold_reps, lookups, list_reps, proc_reps, check_reps = (
        (1, 200, 2, 7, 3) if opts.quick else (3, 1000, 5, 10, 5)
    )
    # the rows without a target (which, and check after an edit or with nothing kept) are run fewer
    # times with --quick
    info_reps, info_checks = (3, 1) if opts.quick else (proc_reps, check_reps)
    reps = {"which": info_reps, "list": proc_reps, "run": proc_reps, "check": check_reps,
            "check-edited": info_checks, "check-cold": info_checks}

    header("resolution at scale: lookup, which, list, run and check")
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    results: dict[int, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="aa-bench-resolution-") as tmp:
        home = Path(tmp, "home")
        home.mkdir()
        os.environ["HOME"] = str(home)
        import yaml  # noqa: F401  (imported once up front so the first cold run does not pay for it)

        projects: dict[int, tuple[Path, list[str]]] = {}
        for n in sizes:
            project = Path(tmp, f"proj-{n}")
            start = time.perf_counter()
            projects[n] = (project, generate(project, n))
            print(f"generated {n} skills in {time.perf_counter() - start:.1f} s", flush=True)
            results[n] = in_process(project, projects[n][1], cold_reps, lookups, list_reps)
        procs = as_processes(projects, home, reps)

    def col(n: int, key: str, stat: str = "median") -> str:
        values = results[n][key] if key in results[n] else procs[n][key]  # type: ignore[assignment]
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
        [f"process: agentapps which NAME, median of {info_reps}"]
        + [col(n, "which") for n in sizes],
        [f"process: agentapps list, median of {proc_reps}"] + [col(n, "list") for n in sizes],
        [f"process: agentapps run CODE-SKILL --x 3, median of {proc_reps}"]
        + [col(n, "run") for n in sizes],
        [f"process: agentapps run CODE-SKILL --x 3, max of {proc_reps}"]
        + [col(n, "run", "max") for n in sizes],
        [f"process: agentapps check, median of {check_reps}"] + [col(n, "check") for n in sizes],
        [f"process: agentapps check, one skill edited, median of {info_checks}"]
        + [col(n, "check-edited") for n in sizes],
        [f"process: agentapps check, nothing kept, median of {info_checks}"]
        + [col(n, "check-cold") for n in sizes],
    ]
    table(["measure (processes: warm index cache)"] + [f"{n} skills" for n in sizes], rows)
    print()
    footer()
    if 10_000 not in sizes:
        verdict(None, f"issue 10's targets are at 10 000 skills; the sizes were {sizes}")
        return
    repeated = median(results[10_000]["finds"]) * 1000  # type: ignore[arg-type]
    ok = report_targets(sizes, procs, repeated)
    run_ratio = list_ratio = "n/a"
    if 1000 in sizes:
        run_ratio = f"{median(procs[10_000]['run']) / median(procs[1000]['run']):.2f}x"
        list_ratio = f"{median(procs[10_000]['list']) / median(procs[1000]['list']):.2f}x"
    verdict(
        ok,
        f"at 10 000 vs 1 000 skills: warm run {run_ratio} (<= {RUN_RATIO:g}x), warm list "
        f"{list_ratio} (<= {LIST_RATIO:g}x); warm check at 10 000 {median(procs[10_000]['check']):.2f} s "
        f"(<= {CHECK_S:g} s); repeated lookup {repeated:.3f} ms (<= {TARGET_MS:g} ms)"
        + (f"; at 50 000: list {median(procs[50_000]['list']):.2f} s (<= {LIST_50K_S:g} s), check "
           f"{median(procs[50_000]['check']):.2f} s (<= {CHECK_50K_S:g} s)" if 50_000 in sizes else ""),
    )


if __name__ == "__main__":
    main()
