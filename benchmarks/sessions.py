"""Session append + load: a session of 50 entries in the file store (`.agent-apps/sessions/`).

A temporary project holds one session file already at the rolling window (50 entries, each with
`args` of about 200 characters and a `result` of about 600, what `capture: $all` stores for a small
code skill; about 50 KB on disk). Each operation then does what the `session` middleware does for
one call: load the history, append one entry (rolling the oldest out), save. Median of 200.

1. Store level: `FileSessionStore.load(key)` + `FileSessionStore.append(key, entry, 50)`, with a
   breakdown of the parts (load alone; append alone: lock, re-read, `json.dumps(indent=2)`, atomic
   write with two fsyncs; the atomic write alone; the lock alone).
2. Pipeline level: a driver code skill times `await ctx.manager.invoke("chat", args)` where
   `chat` is a code skill with `session: {key: args.sessionId, store: file}`; the same skill
   without a session is the baseline, and the difference is the session middleware's cost
   (history load, capture with secret scrubbing, append).

Then 200 pipeline calls are profiled (top 12 by own time). Issue 3 sets no target, so the verdict
is INFO.

    .venv/bin/python benchmarks/sessions.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _common import dur, footer, header, median, percentile, profile_rows, table

ENTRIES = 50
KEY = "bench-session-1"
QUESTION = (
    "Summarise the open issues about the state store and suggest which one to fix first; keep it "
    "short, mention the file names involved and anything that looks like a regression since the "
    "last release."
)
ANSWER = (
    "Three issues are open. The most urgent is the lock timeout under load in stores/state.py: "
    "writers wait on a single lock file for the whole directory, so unrelated keys contend. Next, "
    "sessions grow to the window and are rewritten whole on every call (stores/sessions.py). "
    "Last, a cosmetic one: 'agentapps sessions show' cuts long values without saying how many "
    "characters were left out. Fix the lock first; it is the only one users can hit without "
    "doing anything unusual, and it has a clear test (8 processes incrementing one counter). "
)

CHAT = """
frontmatter = {{
    "name": "{name}",
    "description": "Benchmark: a code skill that answers with a fixed text.",
    "metadata": {{
        {session}
        "params": {{"type": "object", "properties": {{
            "sessionId": {{"type": "string"}}, "question": {{"type": "string"}}}}}},
    }},
}}

ANSWER = {answer!r}


def run(ctx, args):
    history = ctx.locals.get("session")
    return ANSWER + (f"(history: {{len(history)}})" if history is not None else "")
"""

DRIVER = """
import time

frontmatter = {
    "name": "bench-driver",
    "description": "Benchmark: invoke a skill n times, timing each call.",
    "metadata": {"params": {"type": "object"}},
}


async def run(ctx, args):
    times = []
    for _ in range(args["n"]):
        start = time.perf_counter()
        result = await ctx.manager.invoke(args["skill"], args["args"])
        times.append(time.perf_counter() - start)
    return {"times": times, "result": result}
"""


def make_project(tmp: Path) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    session = '"session": {"key": "args.sessionId", "store": "file"},'
    for name, setting in (("chat", session), ("chat-plain", "")):
        text = CHAT.format(name=name, session=setting, answer=ANSWER)
        (project / f"{name}.skill.py").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    (project / "bench-driver.skill.py").write_text(
        textwrap.dedent(DRIVER).lstrip(), encoding="utf-8"
    )
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.chdir(project)
    return project


def entry(i: int) -> dict:
    return {
        "skill": "chat",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "status": "ok",
        "args": {"sessionId": KEY, "question": f"{QUESTION} ({i})"},
        "result": ANSWER,
    }


def timed(fn, n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return times


def invoke_times(root, skill: str, n: int) -> list[float]:
    from agentapps.context.manager import invoke_root

    args = {"skill": skill, "n": n, "args": {"sessionId": KEY, "question": QUESTION}}
    return asyncio.run(invoke_root(root, "bench-driver", args))["times"]


def row(label: str, times: list[float]) -> list[str]:
    return [
        label,
        str(len(times)),
        dur(median(times)),
        dur(min(times)),
        dur(percentile(times, 95)),
        f"{1 / median(times):,.0f}/s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="40 operations instead of 200")
    parser.add_argument("--ops", type=int, help="operations per measurement (default 200)")
    opts = parser.parse_args()
    n = opts.ops or (40 if opts.quick else 200)

    header(f"session append + load, {ENTRIES} entries, file store")
    with tempfile.TemporaryDirectory(prefix="aa-bench-sessions-") as tmp:
        project = make_project(Path(tmp))
        from agentapps.boot import bootstrap
        from agentapps.context.manager import invoke_root
        from agentapps.core.atomic import FileLock, write_atomic
        from agentapps.stores.sessions import open_store
        from agentapps.stores.state import encode_key

        root = bootstrap(project)
        store = open_store(root.globals, "file")
        for i in range(ENTRIES):
            store.append(KEY, entry(i), ENTRIES)
        path = store.root / encode_key(KEY)
        size = path.stat().st_size
        print(f"session file: {path.relative_to(project)}, {ENTRIES} entries, {size:,} bytes")

        def load_append(i: int) -> None:
            history = store.load(KEY)
            assert len(history) == ENTRIES
            store.append(KEY, entry(i), ENTRIES)

        def dumps(i: int) -> None:
            import json

            json.dumps({"key": KEY, "entries": history}, ensure_ascii=False, indent=2)

        history = store.load(KEY)
        data = path.read_bytes()
        lock = FileLock(store.root / ".lock")
        spare = store.root / "bench-spare.json"

        def lock_only(i: int) -> None:
            with lock:
                pass

        parts = [
            ("load + append (what one call does)", load_append),
            ("  load alone (read + json.loads)", lambda i: store.load(KEY)),
            (
                "  append alone (lock, load, dumps, write)",
                lambda i: store.append(KEY, entry(i), ENTRIES),
            ),
            ("    json.dumps(indent=2) of 50 entries", dumps),
            (
                "    write_atomic (temp, fsync, rename, fsync dir)",
                lambda i: write_atomic(spare, data),
            ),
            ("    FileLock acquire + release", lock_only),
        ]
        timed(load_append, 10)  # warm-up
        # round robin, one operation of each in turn, so disk and CPU noise hits all of them alike
        samples: list[list[float]] = [[] for _ in parts]
        for i in range(n):
            for (_, fn), times in zip(parts, samples, strict=True):
                start = time.perf_counter()
                fn(i)
                times.append(time.perf_counter() - start)
        rows = [row(label, times) for (label, _), times in zip(parts, samples, strict=True)]
        if len(store.load(KEY)) != ENTRIES:
            sys.exit("error: the rolling window did not hold the session at 50 entries")

        invoke_times(root, "chat", 10)  # warm-up: import the skills, plan the chains
        invoke_times(root, "chat-plain", 10)
        with_session: list[float] = []
        plain: list[float] = []
        batch = max(1, n // 5)
        while len(with_session) < n:  # alternate in batches so load drift hits both alike
            k = min(batch, n - len(with_session))
            with_session += invoke_times(root, "chat", k)
            plain += invoke_times(root, "chat-plain", k)
        result = asyncio.run(invoke_root(root, "chat", {"sessionId": KEY, "question": QUESTION}))
        if f"(history: {ENTRIES})" not in result:
            sys.exit(f"error: chat did not see {ENTRIES} entries of history: {result[-40:]!r}")
        rows += [
            row("invoke chat (session, file store)", with_session),
            row("invoke chat-plain (no session)", plain),
        ]
        extra = median(with_session) - median(plain)

        profiler = cProfile.Profile()
        profiler.enable()
        invoke_times(root, "chat", n)
        profiler.disable()
        os.chdir(tempfile.gettempdir())

    print()
    table(["operation", "n", "median", "min", "p95", "rate"], rows)
    print(f"session middleware cost per call (median difference): {dur(extra)}")
    print()
    print(f"cProfile of {n} invokes of chat (the profiler inflates times), top 12 by own time:")
    table(
        ["function", "ncalls", "own", "cumulative"],
        profile_rows(pstats.Stats(profiler, stream=sys.stdout), 2, 12),
    )
    print()
    footer()
    print(
        f"VERDICT: INFO - load + append of a {ENTRIES}-entry session ({size:,} bytes): "
        f"{rows[0][2]} median (load {rows[1][2]}, append {rows[2][2]}, of which write_atomic "
        f"{rows[4][2]}); through the pipeline {rows[6][2]} vs {rows[7][2]} without a session "
        f"(+{dur(extra)}) (issue 3 sets no target)"
    )


if __name__ == "__main__":
    main()
