"""Directive expansion: a 1 KiB and a 100 KiB markdown skill body, scanner alone and full middleware.

The bodies are generated (fixed seed) with a realistic mix: headings, prose, bullet lists, inline
code spans, URLs, times (`10:30`), `a:b`, an HTML comment now and then, and fenced code blocks that
hold directive-looking text (`:arg[x]`), which must not be expanded. About one directive per 200
bytes of body, spread over the bundled directive skills: `arg` (plain, dotted, with a default),
`config`, `context`, `path`, `env`, `skill` and `inline`. Each body has a directive-free twin of
nearly the same size (every directive replaced by its label), used as the baseline.

Measured, each as a median of N:

1. the pure scanner, `agentapps.directives.scanner.parse(body)` (no skills, no I/O);
2. the full pipeline in process: a driver code skill sets `ctx.globals.internals.dry_run = True`
   (what `agentapps run --dry-run` does) and times `await ctx.manager.invoke(SKILL, args)`, so
   the `directives` middleware serves every directive through its skill and the bundled `agent`
   returns the dry-run prompt without calling a model. The twin goes through the same path; the
   difference is the cost of directive expansion (reported per directive too).

Then one run of the 100 KiB skill is profiled with cProfile (top 12 by cumulative and by own time).
There are no targets in issue 3 for this, so the verdict is INFO.

    .venv/bin/python benchmarks/directives.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import random
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _common import dur, footer, header, median, profile_rows, table

SIZES = {"1 KiB": 1024, "100 KiB": 100 * 1024}
BYTES_PER_DIRECTIVE = 200

FRONTMATTER = """---
name: {name}
description: Benchmark prompt of about {size} with directives.
metadata:
  env: [BENCH_TOKEN]
  custom:
    tone: friendly
    limits: {{words: 300}}
  params:
    type: object
    properties:
      name: {{type: string}}
      topic: {{type: string}}
      count: {{type: integer}}
      user: {{type: object}}
---
"""
ARGS = {"name": "Ada", "topic": "state machines", "count": 3, "user": {"name": "Bo", "id": 42}}

# (weight, directive text, the plain label that replaces it in the twin)
DIRECTIVES = [
    (14, ":arg[name]", "name"),
    (10, ":arg[topic]", "topic"),
    (5, ":arg[user.name]", "user name"),
    (5, ":arg[count]", "count"),
    (4, ':arg[audience]{default="engineers"}', "audience"),
    (6, ":config[custom.tone]", "tone"),
    (5, ":config[custom.limits.words]", "words"),
    (4, ":config[model.id]{default=unset}", "model"),
    (8, ":context[tool.name]", "tool name"),
    (6, ":context[args.topic]", "args topic"),
    (10, ":path[data/notes.txt]", "data/notes.txt"),
    (7, ":env[BENCH_TOKEN]{default=none}", "token"),
    (3, ":skill[state-get]", "state-get"),
    (3, ":inline[snippets/style.md]", "style"),
]
_WORDS = (
    "the a of to and in that is for it as with on by this be are from or at an which each when "
    "skill prompt state session value result model file call process agent user request answer "
    "keep short clear write read check every never always first then before after only also"
)
WORDS = _WORDS.split()
PROSE_EXTRAS = [
    "see https://example.com/docs/guide#setup for details",
    "meet at 10:30 or 14:45",
    "use the key user:alice:prefs",
    "a ratio of 3:2",
    "call `state-get` first",
    "run ``ctx.manager.invoke(`x`)`` once",
    "write `:arg[name]` to insert an argument",
    r"an escaped \:arg[name] stays literal",
    "it works :smile:",
]
FENCES = [
    (
        "```python\nasync def run(ctx, args):\n    value = args.get('name')  # :arg[name] is text\n"
        "    return {'ok': True, 'at': '10:30'}\n```\n"
    ),
    "```yaml\nsession: args.sessionId\nstore: file\nnote: ':config[custom.tone] stays'\n```\n",
    "```\n$ agentapps run --dry-run doc --name Ada\n:context[tool.name] unexpanded\n```\n",
    "    indented code :arg[topic] is not scanned\n    second line\n",
]


def make_body(size: int, seed: int) -> tuple[str, str, int]:
    """(body with directives, directive-free twin, number of directives) of about `size` bytes."""
    rng = random.Random(seed)
    weights = [w for w, _, _ in DIRECTIVES]
    real: list[str] = []
    twin: list[str] = []
    count = 0
    next_at = BYTES_PER_DIRECTIVE // 2
    length = 0
    section = 0
    last = ""  # the kind of the previous block
    marks: list[tuple[int, int, int]] = [(0, 0, 0)]  # (bytes, pieces, directives) after each piece

    def emit(a: str, b: str | None = None) -> None:
        nonlocal length
        real.append(a)
        twin.append(a if b is None else b)
        length += len(a.encode("utf-8"))
        marks.append((length, len(real), count))

    def sentence() -> None:
        nonlocal count, next_at
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
        words[0] = words[0].capitalize()
        text = " ".join(words)
        if rng.random() < 0.3:
            text += ", " + rng.choice(PROSE_EXTRAS)
        if length >= next_at:
            _, directive, label = rng.choices(DIRECTIVES, weights)[0]
            cut = rng.randint(1, len(words) - 1)
            before = " ".join(text.split(" ")[:cut])
            after = " ".join(text.split(" ")[cut:])
            # the twin pads the label so both bodies have the same length
            count += 1
            emit(
                f"{before} {directive} {after}. ",
                f"{before} {label.ljust(len(directive))} {after}. ",
            )
            next_at += BYTES_PER_DIRECTIVE
        else:
            emit(text + ". ")

    while length < size:
        roll = rng.random()
        if roll < 0.08 or section == 0:
            section += 1
            emit(f"## Section {section}\n\n")
            last = "heading"
        elif roll < 0.20:
            fence = rng.choice(FENCES)
            if fence.startswith(" ") and last == "list":  # it would continue the list item
                fence = FENCES[0]
            emit(fence + "\n")
            last = "code"
        elif roll < 0.23:
            emit("<!-- reviewer note: :arg[name] inside a comment is dropped -->\n\n")
            last = "comment"
        elif roll < 0.40:
            for _ in range(rng.randint(2, 4)):
                emit("- ")
                sentence()
                emit("\n")
            emit("\n")
            last = "list"
        else:
            last = "prose"
            for _ in range(rng.randint(2, 5)):
                sentence()
            emit("\n\n")
    _, pieces, count = min(marks, key=lambda m: abs(m[0] - size))  # the cut nearest `size`
    return "".join(real[:pieces]), "".join(twin[:pieces]), count


DRIVER = """
import time

frontmatter = {
    "name": "bench-driver",
    "description": "Benchmark: invoke a markdown skill n times as --dry-run does, timing each call.",
    "metadata": {"params": {"type": "object"}},
}


async def run(ctx, args):
    internals = ctx.globals.internals
    before = internals.dry_run
    internals.dry_run = True  # what `agentapps run --dry-run` sets: no model is called
    times = []
    try:
        for _ in range(args["n"]):
            start = time.perf_counter()
            prompt = await ctx.manager.invoke(args["skill"], args["args"])
            if isinstance(prompt, dict):  # a markdown dry run: {dryRun, system, userMessage, ...}
                prompt = prompt["system"]
            times.append(time.perf_counter() - start)
    finally:
        internals.dry_run = before
    return {"times": times, "chars": len(prompt), "prompt": prompt if args.get("keep") else None}
"""


def make_project(tmp: Path, bodies: dict[str, tuple[str, str, int]]) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    (project / "data").mkdir()
    (project / "data" / "notes.txt").write_text("notes\n", encoding="utf-8")
    (project / "snippets").mkdir()
    (project / "snippets" / "style.md").write_text(
        "Write short sentences. Prefer examples to rules.\n", encoding="utf-8"
    )
    (project / "bench-driver.skill.py").write_text(
        textwrap.dedent(DRIVER).lstrip(), encoding="utf-8"
    )
    for label, (body, twin, _count) in bodies.items():
        for name, text in ((skill_name(label), body), (skill_name(label, twin=True), twin)):
            (project / f"{name}.skill.md").write_text(
                FRONTMATTER.format(name=name, size=label) + text, encoding="utf-8"
            )
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.environ["BENCH_TOKEN"] = "tok-123"
    os.chdir(project)
    return project


def skill_name(label: str, twin: bool = False) -> str:
    return "doc-" + label.replace(" ", "").lower() + ("-plain" if twin else "")


def invoke_times(root, skill: str, n: int, keep: bool = False) -> dict:
    from agentapps.context.manager import invoke_root

    return asyncio.run(
        invoke_root(root, "bench-driver", {"skill": skill, "n": n, "args": ARGS, "keep": keep})
    )


def scan_times(body: str, n: int) -> list[float]:
    from agentapps.directives.scanner import parse

    times = []
    for _ in range(n):
        start = time.perf_counter()
        parse(body, first_line=17)
        times.append(time.perf_counter() - start)
    return times


def block_parse_times(body: str, n: int) -> list[float]:
    """What scanner._units spends in markdown-it: build the block parser and parse `body`."""
    from markdown_it import MarkdownIt

    times = []
    for _ in range(n):
        start = time.perf_counter()
        MarkdownIt("commonmark").disable(["inline", "text_join"]).parse(body)
        times.append(time.perf_counter() - start)
    return times


HARNESS = ("asyncio" + os.sep, "benchmarks" + os.sep, "bench-driver.skill.py")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--seed", type=int, default=3, help="seed for the generated bodies")
    opts = parser.parse_args()
    # (scanner runs, pipeline runs) per size
    reps = (
        {"1 KiB": (100, 30), "100 KiB": (5, 3)}
        if opts.quick
        else {
            "1 KiB": (1000, 300),
            "100 KiB": (40, 25),
        }
    )

    header(
        "directive expansion: scanner.parse and the directives middleware (--dry-run in process)"
    )
    bodies = {label: make_body(size, opts.seed) for label, size in SIZES.items()}
    rows_scan, rows_full, summary = [], [], []
    with tempfile.TemporaryDirectory(prefix="aa-bench-directives-") as tmp:
        project = make_project(Path(tmp), bodies)
        from agentapps.boot import bootstrap
        from agentapps.directives.scanner import find

        root = bootstrap(project)
        # Correctness first: every directive expanded, none inside code, the twin's prompt agrees.
        for label, (body, twin, count) in bodies.items():
            found = find(body)
            if len(found) != count:
                sys.exit(
                    f"error: scanner found {len(found)} directives in {label}, expected {count}"
                )
            out = invoke_times(root, skill_name(label), 1, keep=True)["prompt"]
            # each directive's text is left only where the body has it in code or escaped
            left = [d.raw for d in found if out.count(d.raw) >= body.count(d.raw)]
            if left or "Ada" not in out:
                sys.exit(f"error: the {label} dry-run prompt is not expanded: {left[:3]}")
        print(
            "bodies: "
            + "; ".join(
                f"{label}: {len(b.encode())} bytes, {c} directives "
                f"({len(b.encode()) / c:.0f} bytes per directive), twin {len(t.encode())} bytes"
                for label, (b, t, c) in bodies.items()
            )
        )

        for label, (body, twin, count) in bodies.items():
            n_scan, n_full = reps[label]
            scan_times(body, max(3, n_scan // 10))  # warm-up (imports markdown-it)
            scan = scan_times(body, n_scan)
            scan_twin = scan_times(twin, n_scan)
            blocks = block_parse_times(body, n_scan)
            rows_scan.append(
                [
                    f"{label} ({count} directives)",
                    n_scan,
                    dur(median(scan)),
                    dur(min(scan)),
                    dur(median(scan_twin)),
                    f"{dur(median(blocks))} ({median(blocks) / median(scan):.0%})",
                    f"{len(body.encode()) / median(scan) / 1e6:.1f} MB/s",
                ]
            )
            invoke_times(root, skill_name(label), max(2, n_full // 10))  # warm-up
            invoke_times(root, skill_name(label, twin=True), max(2, n_full // 10))
            full: list[float] = []
            plain: list[float] = []
            # alternate in small batches so load drift hits both alike
            batch = max(1, n_full // 5)
            done = 0
            while done < n_full:
                k = min(batch, n_full - done)
                full += invoke_times(root, skill_name(label), k)["times"]
                plain += invoke_times(root, skill_name(label, twin=True), k)["times"]
                done += k
            extra = median(full) - median(plain)
            rows_full.append(
                [
                    f"{label} ({count} directives)",
                    n_full,
                    dur(median(full)),
                    dur(min(full)),
                    dur(median(plain)),
                    dur(extra),
                    dur(extra / count),
                ]
            )
            summary.append(
                f"{label}: parse {dur(median(scan))}, invoke {dur(median(full))} "
                f"(+{dur(extra)} over the twin, {dur(extra / count)} per directive)"
            )

        profiler = cProfile.Profile()
        profiler.enable()
        invoke_times(root, skill_name("100 KiB"), 2 if opts.quick else 5)
        profiler.disable()
        os.chdir(tempfile.gettempdir())

    print()
    print("scanner: agentapps.directives.scanner.parse(body)")
    table(
        ["body", "runs", "median", "min", "twin median", "of which markdown-it", "throughput"],
        rows_scan,
    )
    print()
    print(
        "full pipeline: ctx.manager.invoke(skill) with internals.dry_run = True "
        "(directives middleware + dry-run agent prompt)"
    )
    table(
        [
            "body",
            "runs",
            "median",
            "min",
            "twin (no directives) median",
            "directive cost",
            "per directive",
        ],
        rows_full,
    )
    stats = pstats.Stats(profiler, stream=sys.stdout)
    n_prof = 2 if opts.quick else 5
    print()
    print(
        f"cProfile of {n_prof} dry-run invokes of the 100 KiB skill (the profiler inflates times),"
        " top 12 by cumulative time\n(the asyncio loop and this script's frames left out):"
    )
    table(["function", "ncalls", "own", "cumulative"], profile_rows(stats, 3, 12, harness=HARNESS))
    print()
    print("top 12 by own time (tottime):")
    table(["function", "ncalls", "own", "cumulative"], profile_rows(stats, 2, 12))
    print()
    footer()
    print("VERDICT: INFO - " + "; ".join(summary) + " (issue 3 sets no target)")


if __name__ == "__main__":
    main()
