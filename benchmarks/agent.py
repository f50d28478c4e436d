"""The agent: the first snippet in a new sandbox, one invoke round trip from agent code, per-turn
overhead of the agent loop (played by `agent-scripted`, so no model and no network), and a
markdown skill against a code skill that calls the same two skills directly.

1. First snippet. The isolate lives in a sandbox process of its own: `Sandbox()` spawns it (it
   imports mini-racer, opens the V8 isolate and runs the prelude) and returns at once; the first
   snippet waits for it. In fresh host processes (median of 10): `import agentapps.sandbox`,
   `Sandbox()` and a first `return 1`, timed inside the host, which must not have imported
   mini-racer. In this process (median of 50): `Sandbox()` + `return 1` + `close()`, a new
   sandbox process each time; and one more `return 1` in a sandbox that is already open (median
   of 200).
2. One `ctx.manager.invoke` round trip from agent code. A driver code skill opens a `Sandbox` whose
   `invoke` is the agent's own bridge (`agentapps.agent.code.bridge`) from an untrusted code
   context (`agentapps.agent.scope.code_context`, allowed-tools `noop`), as an agent run sets it
   up. A snippet awaits `ctx.manager.invoke('noop', {x: i})` 200 times in sequence; the same loop
   awaiting `Promise.resolve(i)` is the snippet's own cost and is subtracted. The same snippet with
   a Python coroutine that just returns `x` (no pipeline) gives the bridge alone, and a Python loop
   of `invoke(..., untrusted=True)` from the code context gives the pipeline alone. The same for a
   `Promise.all` of 50. 5 rounds, median. `SandboxLimits.max_invokes` (50 per snippet in an agent
   run) is raised so that one snippet can make 200 calls. Cross-check through a real agent run: a
   scripted markdown skill whose one code turn makes 50 sequential invokes, against the same
   skill with `Promise.resolve` (difference / 50, median of 20).
3. Per-turn overhead. Markdown skills whose script has T turns, each with trivial code (`return 1`
   plus a comment naming the turn, because the loop guard stops a run that sends identical code
   3 times in a row), then a final text turn. T = 0 (the final text turn alone) is the fixed cost;
   per turn = (median(T) - median(0)) / T, for T = 1, 10, 30 (median of 20, round robin;
   `maxTurns`/`maxSteps` raised to 100). Then, to see where a turn goes, four variants run in
   turn (median of 20 each), patched in this process only: as is; `direct`, the agent's callback
   refs (invokeRef and hookRef) run their function on one Context instead of through the
   middleware chain (a what-if); `stub`, `Sandbox.run` answers at once (attribution only); and
   both. Also: real call counts per turn (functions wrapped with counters for one run), one
   callback-ref invoke from a code skill, and a cProfile of 3 runs of turns-30.
4. The whole markdown-skill path against direct calls. `count-md` is a markdown skill with
   `allowed-tools: file-read word-count`; its one scripted code turn invokes `file-read` and the
   code skill `word-count` on a 2.3 KB file and calls `ctx.manager.finish(count)`. `count-direct`
   is a code skill with the same allowed-tools that makes the same two invokes. Wall time of
   `invoke_root` in process (median of 20, round robin) and of `agentapps run NAME --path
   sample.txt` as fresh processes (median of 5, alternating, after one warm-up of each); then the
   top-level imports only the markdown path pays (`-X importtime`, median of 3).

Issue 4 sets no numeric targets, so the verdict is INFO.

    .venv/bin/python benchmarks/agent.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from _common import (
    clean_env,
    console_script,
    dur,
    footer,
    header,
    median,
    ms,
    profile_rows,
    table,
    time_process,
    us,
)

TURN_COUNTS = (1, 10, 30)
SEQ_N = 200
ALL_N = 50
AGENT_N = 50  # sequential invokes in the cross-check through a real agent run (the per-snippet cap)

# -- skills of the temporary project ----------------------------------------------------------

NOOP = """
frontmatter = {
    "name": "noop",
    "description": "Benchmark: does nothing but return its argument.",
    "metadata": {"params": {"type": "object", "properties": {"x": {"type": "integer"}}}},
}


def run(ctx, args):
    return args["x"]
"""

WORD_COUNT = """
frontmatter = {
    "name": "word-count",
    "description": "Benchmark: count the words of a text.",
    "metadata": {
        "params": {"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"], "additionalProperties": False},
    },
}


def run(ctx, args):
    return {"words": len(args["text"].split())}
"""

COUNT_DIRECT = """
frontmatter = {
    "name": "count-direct",
    "description": "Benchmark: count the words of a file by calling file-read and word-count.",
    "allowed-tools": "file-read word-count",
    "metadata": {
        "params": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"], "additionalProperties": False},
    },
}


async def run(ctx, args):
    text = await ctx.manager.invoke("file-read", {"path": args["path"]})
    counted = await ctx.manager.invoke("word-count", {"text": text})
    return counted["words"]
"""

COUNT_CODE = (
    "const text = await ctx.manager.invoke('file-read', {path: memory.args.path});\n"
    "const counted = await ctx.manager.invoke('word-count', {text});\n"
    "ctx.manager.finish(counted.words);\n"
    "return counted.words;"
)

# The driver for section 2: a code skill, so it can set up the sandbox the way an agent run does.
SANDBOX_DRIVER = """
import time

from agentapps.agent.code import bridge
from agentapps.agent.scope import code_context, code_policies
from agentapps.sandbox import Sandbox, SandboxLimits
from agentapps.callbacks.refs import create_callback_ref, release_callback_ref

frontmatter = {
    "name": "bench-sandbox",
    "description": "Benchmark: invoke round trips from agent code in a sandbox, and from Python.",
    "metadata": {"params": {"type": "object"}},
}

SEQ = "let s = 0; for (let i = 0; i < %d; i++) s += await %s; return s;"
ALL = ("const r = await Promise.all(Array.from({length: %d}, (_, i) => %s));"
       " return r.reduce((a, b) => a + b, 0);")
INVOKE = "ctx.manager.invoke('noop', {x: i})"
PLAIN = "Promise.resolve(i)"


async def run(ctx, args):
    n, width, reps, hooks = args["n"], args["width"], args["reps"], args["hooks"]
    code_ctx = code_context(ctx, code_policies(ctx, "noop", "bench-sandbox"))
    pipeline = bridge(code_ctx)  # what the agent's sandbox calls: the full pipeline, untrusted

    async def nothing(name, call_args):  # the bridge alone: no pipeline behind it
        return call_args["x"]

    out = {}

    def keep(key, seconds):
        out.setdefault(key, []).append(seconds)

    with Sandbox(SandboxLimits(max_invokes=max(n, width) + 10)) as sandbox:

        async def snippet(code, invoke, expect):
            start = time.perf_counter()
            result = await sandbox.run(code, invoke)
            elapsed = time.perf_counter() - start
            if not result.ok or result.value != expect:
                raise RuntimeError(f"snippet failed: {result.error} value={result.value!r}")
            return elapsed

        cases = [
            ("seq pipeline", SEQ % (n, INVOKE), pipeline, n),
            ("seq bridge", SEQ % (n, INVOKE), nothing, n),
            ("seq plain", SEQ % (n, PLAIN), nothing, n),
            ("all pipeline", ALL % (width, INVOKE), pipeline, width),
            ("all bridge", ALL % (width, INVOKE), nothing, width),
            ("all plain", ALL % (width, PLAIN), nothing, width),
        ]
        for _, code, invoke, count in cases:  # warm-up: noop imported, chains planned, JIT
            await snippet(code, invoke, count * (count - 1) // 2)
        for _ in range(reps):
            for key, code, invoke, count in cases:
                keep(key, await snippet(code, invoke, count * (count - 1) // 2))
            start = time.perf_counter()
            for i in range(n):
                await code_ctx.manager.invoke("noop", {"x": i}, untrusted=True)
            keep("py code ctx", (time.perf_counter() - start) / n)
            start = time.perf_counter()
            for i in range(n):
                await ctx.manager.invoke("noop", {"x": i})
            keep("py driver", (time.perf_counter() - start) / n)

    async def on_hook(cb_ctx, event):
        return None

    ref = create_callback_ref(ctx.globals, on_hook, label="bench-hook")
    try:
        event = {"type": "turn-start", "turnNumber": 1}
        for _ in range(50):
            await ctx.manager.invoke(ref, event)
        for _ in range(reps):
            start = time.perf_counter()
            for _ in range(hooks):
                await ctx.manager.invoke(ref, event)
            keep("hook", (time.perf_counter() - start) / hooks)
    finally:
        release_callback_ref(ctx.globals, ref)
    return out
"""

CHILD = """
import asyncio, json, sys, time
t0 = time.perf_counter()
from agentapps.sandbox import Sandbox
t1 = time.perf_counter()
sandbox = Sandbox()  # spawns the sandbox process and returns
t2 = time.perf_counter()
loop = asyncio.new_event_loop()


async def nothing(name, args):
    raise RuntimeError("no invokes here")

t3 = time.perf_counter()
result = loop.run_until_complete(sandbox.run("return 1", nothing))
t4 = time.perf_counter()
sandbox.close()
t5 = time.perf_counter()
assert result.ok and result.value == 1, result
assert "py_mini_racer" not in sys.modules, "the host process imported mini-racer"
print(json.dumps({"import": t1 - t0, "ctor": t2 - t1, "run": t4 - t3, "close": t5 - t4}))
"""


def markdown_skill(
    name: str, body: str, model: dict, *, allowed: str | None = None, params: dict | None = None
) -> str:
    metadata: dict = {"model": model}
    if params is not None:
        metadata["params"] = params
    lines = ["---", f"name: {name}", f"description: Benchmark agent skill {name}."]
    if allowed is not None:
        lines.append(f"allowed-tools: {allowed}")
    lines += [f"metadata: {json.dumps(metadata)}", "---", body, ""]
    return "\n".join(lines)


def scripted(
    project: Path,
    name: str,
    turns: list[dict],
    body: str,
    *,
    allowed: str | None = None,
    params: dict | None = None,
    model: dict | None = None,
) -> None:
    (project / f"{name}.turns.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
    config = {"agent": "agent-scripted", "script": f"{name}.turns.json", **(model or {})}
    text = markdown_skill(name, body, config, allowed=allowed, params=params)
    (project / f"{name}.skill.md").write_text(text, encoding="utf-8")


def sample_text() -> str:
    words = [
        "agent",
        "skill",
        "sandbox",
        "invoke",
        "turn",
        "isolate",
        "prompt",
        "markdown",
        "pipeline",
        "context",
        "model",
        "script",
    ]
    lines = [" ".join(words[(i * 7 + j) % len(words)] for j in range(8)) for i in range(40)]
    return "# Sample\n\n" + "\n".join(lines) + "\n"


def make_project(tmp: Path) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    for name, source in (
        ("noop", NOOP),
        ("word-count", WORD_COUNT),
        ("count-direct", COUNT_DIRECT),
        ("bench-sandbox", SANDBOX_DRIVER),
    ):
        (project / f"{name}.skill.py").write_text(
            textwrap.dedent(source).lstrip(), encoding="utf-8"
        )
    (project / "sample.txt").write_text(sample_text(), encoding="utf-8")
    loose = {"maxTurns": 100, "maxSteps": 100}
    for t in (0, *TURN_COUNTS):
        turns = [{"code": f"return 1; // turn {i + 1}"} for i in range(t)] + [{"text": "done"}]
        scripted(project, f"turns-{t}", turns, f"Return 1 {t} times, then say done.", model=loose)
    loop = "let s = 0; for (let i = 0; i < %d; i++) s += await %s; ctx.manager.finish(s); return s;"
    for name, call in (
        ("rt-invoke", "ctx.manager.invoke('noop', {x: i})"),
        ("rt-plain", "Promise.resolve(i)"),
    ):
        scripted(
            project,
            name,
            [{"code": loop % (AGENT_N, call)}],
            "Call noop a few times.",
            allowed="noop",
        )
    path_params = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    scripted(
        project,
        "count-md",
        [{"text": "Reading and counting.", "code": COUNT_CODE}],
        "Count the words in the file :arg[path] with `file-read` and `word-count`, and "
        "finish with the count.",
        allowed="file-read word-count",
        params=path_params,
    )
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.chdir(project)
    return project


# -- measurements -------------------------------------------------------------------------------


def fresh_sandboxes(tmp: Path, runs: int) -> dict[str, list[float]]:
    """A first snippet in a fresh host process (which starts its sandbox process), timed inside
    the host."""
    env = clean_env(tmp / "home")
    out: dict[str, list[float]] = {}
    for _ in range(runs + 1):  # the first run is a warm-up (bytecode, OS cache)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", CHILD],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit(f"error: the first-snippet host process failed: {proc.stderr[-800:]}")
        for key, value in {**json.loads(proc.stdout), "wall": wall}.items():
            out.setdefault(key, []).append(value)
    return {key: values[1:] for key, values in out.items()}


def warm_sandboxes(runs: int, snippets: int) -> dict[str, list[float]]:
    """Sandbox() + `return 1` + close() in this process after the first (each Sandbox starts a
    sandbox process of its own); and one more snippet in an open sandbox."""
    from agentapps.sandbox import Sandbox

    async def nothing(name: str, args: object) -> object:
        raise RuntimeError("no invokes here")

    out: dict[str, list[float]] = {"ctor": [], "run": [], "close": [], "total": [], "again": []}
    with asyncio.Runner() as runner:
        for i in range(runs + 2):  # 2 warm-ups
            t0 = time.perf_counter()
            sandbox = Sandbox()
            t1 = time.perf_counter()
            result = runner.run(sandbox.run("return 1", nothing))
            t2 = time.perf_counter()
            sandbox.close()
            t3 = time.perf_counter()
            assert result.ok and result.value == 1, result
            if i >= 2:
                for key, value in (
                    ("ctor", t1 - t0),
                    ("run", t2 - t1),
                    ("close", t3 - t2),
                    ("total", t3 - t0),
                ):
                    out[key].append(value)

        async def again() -> list[float]:
            times = []
            with Sandbox() as sandbox:
                for i in range(snippets + 10):
                    start = time.perf_counter()
                    result = await sandbox.run("return 1", nothing)
                    if i >= 10:
                        times.append(time.perf_counter() - start)
                    assert result.ok
            return times

        out["again"] = runner.run(again())
    return out


def timed_invokes(runner: asyncio.Runner, root, name: str, args: dict, expect: object) -> float:
    from agentapps.context.manager import invoke_root

    start = time.perf_counter()
    result = runner.run(invoke_root(root, name, args))
    elapsed = time.perf_counter() - start
    if result != expect:
        sys.exit(f"error: {name} returned {result!r}, expected {expect!r}")
    return elapsed


def round_robin(
    runner: asyncio.Runner, root, cases: list[tuple[str, dict, object]], reps: int, warmup: int = 2
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for i in range(reps + warmup):
        for name, args, expect in cases:
            elapsed = timed_invokes(runner, root, name, args, expect)
            if i >= warmup:
                out[name].append(elapsed)
    return out


def top_imports(
    exe: str, argv: list[str], cwd: Path, env: dict[str, str], runs: int
) -> dict[str, float]:
    """Median cumulative µs of each top-level import (`-X importtime`), and "(total)"."""
    found: dict[str, list[int]] = {}
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", exe, *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            sys.exit(f"error: importtime run failed: {proc.stderr[-500:]}")
        total = 0
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            _head, cum_us, name = line.split("|", 2)
            if name.startswith(" ") and not name.startswith("  "):  # top level: one space
                found.setdefault(name.strip(), []).append(int(cum_us))
                total += int(cum_us)
        found.setdefault("(total)", []).append(total)
    return {name: median(values) for name, values in found.items()}


# -- profile ------------------------------------------------------------------------------------


HARNESS = ("asyncio" + os.sep, "benchmarks" + os.sep + "agent.py")


COUNTED = [
    ("pipeline invokes (ctx.manager.invoke)", "agentapps.context.manager", None, "invoke"),
    ("contexts served (invokes + chain entries)", "agentapps.context.manager", None, "_serve"),
    ("contexts built (Context.__init__)", "agentapps.context.context", "Context", "__init__"),
    ("skill lookups (Lookup.find)", "agentapps.tools.lookup", "Lookup", "find"),
    ("trace entries (Trace.record)", "agentapps.agent.trace", "Trace", "record"),
    ("round trips to the sandbox process (Engine.call)", "agentapps.sandbox.engine", "Engine",
     "call"),
]


def count_calls(runner: asyncio.Runner, root, name: str) -> dict[str, int]:
    """Real call counts for one run of `name` (cProfile counts every resumption of a coroutine as a
    call, so it cannot count async calls). Wraps the functions for the run, then restores them."""
    import importlib

    counts = {label: 0 for label, *_ in COUNTED}
    saved = []
    for label, module_name, cls_name, attr in COUNTED:
        owner = importlib.import_module(module_name)
        if cls_name is not None:
            owner = getattr(owner, cls_name)
        original = owner.__dict__[attr] if cls_name else getattr(owner, attr)

        def wrapper(*a, __original=original, __label=label, **k):
            counts[__label] += 1
            return __original(*a, **k)

        saved.append((owner, attr, original))
        setattr(owner, attr, wrapper)
    try:
        timed_invokes(runner, root, name, {}, "done")
    finally:
        for owner, attr, original in saved:
            setattr(owner, attr, original)
    return counts


def profile_turns(runner: asyncio.Runner, root, runs: int) -> pstats.Stats:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        timed_invokes(runner, root, f"turns-{TURN_COUNTS[-1]}", {}, "done")
    profiler.disable()
    return pstats.Stats(profiler, stream=sys.stdout)


@contextlib.contextmanager
def unpatched():
    yield [1]


@contextlib.contextmanager
def stubbed_sandbox():
    """Attribution only, in this process: `Sandbox.run` answers `return 1`'s result at once
    (the sandbox process is still started and killed), so the difference is what running a
    snippet costs inside an agent turn."""
    from agentapps.sandbox import Sandbox, SnippetResult

    original = Sandbox.run
    hits = [0]

    async def run(self, code, invoke):
        hits[0] += 1
        return SnippetResult(
            ok=True, value=1, logs="", finished=False, finish_value=None, error=None, invokes=0
        )

    Sandbox.run = run
    try:
        yield hits
    finally:
        Sandbox.run = original


@contextlib.contextmanager
def both_patches():
    hits = [0]
    with direct_callbacks() as a, stubbed_sandbox() as b:
        try:
            yield hits
        finally:
            hits[0] = min(a[0], b[0])


@contextlib.contextmanager
def direct_callbacks():
    """What-if, in this process only: a callback ref served by a function (the agent's invokeRef
    and hookRef), invoked from a context that is not untrusted, runs its function on one Context
    instead of going through the middleware chain. Agent code's calls are untouched."""
    from agentapps.context import manager
    from agentapps.context.calls import call_tool

    original = manager.invoke
    hits = [0]

    async def direct(caller, ref, args, untrusted=False, restrict=(), options=None):
        if isinstance(ref, str) and not options and not (untrusted or caller.envelope.untrusted):
            tool = caller.globals.lookup.memory.get(ref)
            if (
                tool is not None
                and tool.fn is not None
                and (tool.uri or "").startswith("callback://")
            ):
                hits[0] += 1
                return await call_tool(manager.new_context(tool, args, caller, caller.globals))
        return await original(caller, ref, args, untrusted, restrict, options)

    manager.invoke = direct
    try:
        yield hits
    finally:
        manager.invoke = original


# -- sections: each measures, prints its part, and returns the figures the verdict quotes -------


@dataclass(frozen=True)
class Reps:
    fresh: int  # fresh host processes for the first snippet
    warm: int  # Sandbox() + snippet + close() in this process
    again: int  # more snippets in an open sandbox
    rounds: int  # rounds of the round-trip snippets
    agent: int  # runs of each cross-check agent run
    turns: int  # runs of each turns-T skill, and of each what-if variant
    whole: int  # in-process runs of count-md / count-direct
    cli: int  # processes of each
    hooks: int  # callback-ref invokes per round
    profile: int  # profiled runs of turns-30
    imports: int  # -X importtime runs

    @classmethod
    def of(cls, quick: bool) -> Reps:
        if quick:
            return cls(2, 5, 20, 1, 2, 2, 2, 1, 100, 1, 1)
        return cls(10, 50, 200, 5, 20, 20, 20, 5, 1000, 3, 3)


def first_snippet(tmp: Path, reps: Reps) -> dict[str, float]:
    """Section 1: a first `return 1` in a new sandbox, in fresh host processes and in this one."""
    fresh = fresh_sandboxes(tmp, reps.fresh)
    warm = warm_sandboxes(reps.warm, reps.again)
    first = [a + b + c for a, b, c in zip(fresh["import"], fresh["ctor"], fresh["run"], strict=True)]
    print()
    print("1. First snippet (`return 1`, no invokes). Sandbox() spawns the sandbox process, which "
          "imports mini-racer and\n   opens the isolate with its prelude; the first snippet waits "
          "for that. The host never imports mini-racer.")
    table(
        ["", "n", "median", "min", "max"],
        [
            [label, str(len(v)), dur(median(v)), dur(min(v)), dur(max(v))]
            for label, v in (
                ("fresh host: import agentapps.sandbox", fresh["import"]),
                ("fresh host: Sandbox() (spawns the sandbox process)", fresh["ctor"]),
                ("fresh host: first snippet (waits for the sandbox process)", fresh["run"]),
                ("fresh host: first snippet total (the three above)", first),
                ("fresh host: close() (kills the sandbox process)", fresh["close"]),
                ("fresh host: whole host process, wall", fresh["wall"]),
                ("warm host: Sandbox() (a new sandbox process each time)", warm["ctor"]),
                ("warm host: first snippet", warm["run"]),
                ("warm host: close()", warm["close"]),
                ("warm host: Sandbox() + snippet + close()", warm["total"]),
                ("open sandbox: one more `return 1`", warm["again"]),
            )
        ],
    )
    return {"first": median(first), "import": median(fresh["import"]),
            "warm": median(warm["total"]), "again": median(warm["again"])}


def round_trips(runner: asyncio.Runner, root, reps: Reps) -> dict[str, float]:
    """Section 2: one ctx.manager.invoke from agent code, bridge and pipeline apart."""
    from agentapps.context.manager import invoke_root

    rt = runner.run(invoke_root(root, "bench-sandbox", {
        "n": SEQ_N, "width": ALL_N, "reps": reps.rounds, "hooks": reps.hooks}))
    expect = AGENT_N * (AGENT_N - 1) // 2
    agent_rt = round_robin(
        runner, root, [("rt-invoke", {}, expect), ("rt-plain", {}, expect)], reps.agent
    )

    def per_call(key: str, base: str, count: int) -> float:
        return (median(rt[key]) - median(rt[base])) / count

    seq, seq_bridge = per_call("seq pipeline", "seq plain", SEQ_N), per_call(
        "seq bridge", "seq plain", SEQ_N)
    all_, all_bridge = per_call("all pipeline", "all plain", ALL_N), per_call(
        "all bridge", "all plain", ALL_N)
    agent_per = (median(agent_rt["rt-invoke"]) - median(agent_rt["rt-plain"])) / AGENT_N
    snip = {key: dur(median(values)) for key, values in rt.items()}
    print()
    print(f"2. One ctx.manager.invoke('noop') round trip from agent code "
          f"({reps.rounds} rounds, median)")
    table(
        ["", "snippet, median", "per invoke"],
        [
            [f"{SEQ_N} sequential invokes, pipeline", snip["seq pipeline"], us(seq)],
            [f"{SEQ_N} sequential, bridge only (Python returns x)", snip["seq bridge"],
             us(seq_bridge)],
            [f"{SEQ_N} x await Promise.resolve(i) (subtracted)", snip["seq plain"], ""],
            [f"Promise.all of {ALL_N} invokes, pipeline", snip["all pipeline"], us(all_)],
            [f"Promise.all of {ALL_N}, bridge only", snip["all bridge"], us(all_bridge)],
            [f"Promise.all of {ALL_N} resolved promises (subtracted)", snip["all plain"], ""],
            ["Python: code context invoke(untrusted=True), no JS", "",
             us(median(rt["py code ctx"]))],
            ["Python: driver ctx.manager.invoke (issue 2 path)", "", us(median(rt["py driver"]))],
            [
                f"real agent run: {AGENT_N} sequential invokes in one turn, (md - plain) / {AGENT_N}",
                f"{dur(median(agent_rt['rt-invoke']))} vs {dur(median(agent_rt['rt-plain']))}",
                us(agent_per),
            ],
        ],
    )
    return {"seq": seq, "seq_bridge": seq_bridge, "all": all_,
            "py_code": median(rt["py code ctx"]), "hook": median(rt["hook"])}


def per_turn(runner: asyncio.Runner, root, reps: Reps, figures: dict[str, float]) -> dict[str, float]:
    """Section 3: the fixed cost of an agent run and the cost of each further code turn."""
    turns = round_robin(
        runner, root, [(f"turns-{t}", {}, "done") for t in (0, *TURN_COUNTS)], reps.turns
    )
    fixed = median(turns["turns-0"])
    xs = [t for t in (0, *TURN_COUNTS) for _ in turns[f"turns-{t}"]]
    ys = [v for t in (0, *TURN_COUNTS) for v in turns[f"turns-{t}"]]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    print()
    print(f"3. Per-turn overhead of the agent loop (agent-scripted, median of {reps.turns}, "
          "in process)")
    rows = [
        ["T = 0 (one final text turn: the fixed cost)", dur(fixed), dur(min(turns["turns-0"])), ""]
    ]
    each = {}
    for t in TURN_COUNTS:
        values = turns[f"turns-{t}"]
        each[t] = (median(values) - fixed) / t
        rows.append([f"T = {t} code turns + final text turn", dur(median(values)),
                     dur(min(values)), dur(each[t])])
    rows.append(["least-squares slope over all runs", "", "", dur(slope)])
    table(["script", "median", "min", "per turn"], rows)
    print("T = 1 includes waiting for the sandbox process to start (section 1); T = 0 runs no "
          "snippet, so it never waits.")
    print(f"one callback-ref invoke with a no-op handler from a code skill: {us(figures['hook'])} "
          f"(median of {reps.rounds} x {reps.hooks})")
    print(f"one more `return 1` in an open sandbox: {us(figures['again'])}")
    print()
    return {"fixed": fixed, "turn": each[TURN_COUNTS[-1]]}


def where_turns_go(runner: asyncio.Runner, root, reps: Reps, words: int,
                   figures: dict[str, float]) -> dict[str, float]:
    """Section 3, continued: four variants in turn, patched in this process only."""
    last = TURN_COUNTS[-1]
    turn_cases = [("turns-0", {}, "done"), (f"turns-{last}", {}, "done")]
    count_md = ("count-md", {"path": "sample.txt"}, words)
    variants = [
        ("as is", unpatched, [*turn_cases, count_md]),
        ("direct", direct_callbacks, [*turn_cases, count_md]),
        ("stub", stubbed_sandbox, turn_cases),
        ("both", both_patches, turn_cases),
    ]
    what_if: dict[str, dict[str, list[float]]] = {label: {} for label, _, _ in variants}
    for _ in range(reps.turns):  # paired, in turn, so drift hits all variants alike
        for label, patch, cases in variants:
            with patch() as hits:
                for name, values in round_robin(runner, root, cases, 1, warmup=0).items():
                    what_if[label].setdefault(name, []).extend(values)
            if not hits[0]:
                sys.exit(f"error: the what-if patch {label!r} was never used")

    def fixed_turn(label: str) -> tuple[float, float]:
        base = median(what_if[label]["turns-0"])
        return base, (median(what_if[label][f"turns-{last}"]) - base) / last

    (ai_fixed, ai_turn), (wi_fixed, wi_turn), (st_fixed, st_turn), (bo_fixed, bo_turn) = (
        fixed_turn(label) for label in ("as is", "direct", "stub", "both")
    )
    chain = ai_turn - wi_turn
    print()
    print(
        f"Where one turn goes: four variants in turn (median of {reps.turns} each), patched in "
        "this process only.\n`direct`: the agent's callback refs (4 hook events + invokeRef per "
        "turn) run their function on one\nContext instead of through the middleware chain (a "
        "what-if). `stub`: Sandbox.run answers at once\n(attribution only; the sandbox process is "
        "still started and killed). `both`: the two together, so what is\nleft is the provider "
        "loop, the hook policy, the trace and run_code."
    )

    def share(value: float) -> str:
        return f"{value / ai_turn:.0%}"

    table(
        ["variant", f"per turn (T = {last})", "share of as-is", "fixed (T = 0)"],
        [
            ["as is", dur(ai_turn), "100%", dur(ai_fixed)],
            ["direct (callback refs skip the chain)", dur(wi_turn), share(wi_turn), dur(wi_fixed)],
            ["stub (Sandbox.run answers at once)", dur(st_turn), share(st_turn), dur(st_fixed)],
            ["both", dur(bo_turn), share(bo_turn), dur(bo_fixed)],
        ],
    )
    print(
        f"So per turn: the chain for 5 callback-ref invokes {dur(chain)} ({share(chain)}), "
        f"Sandbox.run {dur(ai_turn - st_turn)} ({share(ai_turn - st_turn)}); the savings overlap "
        f"by {dur(chain + ai_turn - st_turn - (ai_turn - bo_turn))}.\n"
        f"For comparison, `return 1` in an open sandbox outside an agent run (section 1): "
        f"{dur(figures['again'])}. count-md in process: "
        f"{dur(median(what_if['as is']['count-md']))} as is, "
        f"{dur(median(what_if['direct']['count-md']))} with `direct`."
    )
    return {"sandbox_share": (ai_turn - st_turn) / ai_turn, "chain_share": chain / ai_turn}


def counts_and_profile(runner: asyncio.Runner, root, reps: Reps) -> None:
    """Section 3, end: real call counts per turn, and a cProfile of turns-30."""
    last = TURN_COUNTS[-1]
    prof = profile_turns(runner, root, reps.profile)
    count0 = count_calls(runner, root, "turns-0")
    count_last = count_calls(runner, root, f"turns-{last}")
    print()
    print(f"Calls per turn (counted: (turns-{last} - turns-0) / {last}) and for the fixed part "
          "(turns-0):")
    table(
        ["", "per turn", "turns-0"],
        [
            [label, f"{(count_last[label] - count0[label]) / last:.1f}", str(count0[label])]
            for label, *_ in COUNTED
        ],
    )
    print()
    print(
        f"cProfile of turns-{last} (per run, {reps.profile} runs; the profiler inflates times; the "
        "isolate runs in the sandbox process,\nso its work shows up as the wait in the event "
        "loop's selector; ncalls of a coroutine counts its resumptions), top 14 by cumulative "
        "time\n(the asyncio loop and this script's frames are left out):"
    )
    table(
        ["function", "ncalls", "own", "cumulative"],
        profile_rows(prof, 3, 14, runs=reps.profile, harness=HARNESS),
    )
    print()
    print("top 14 by own time:")
    table(["function", "ncalls", "own", "cumulative"], profile_rows(prof, 2, 14, runs=reps.profile))


def cli_runs(project: Path, env: dict[str, str], words: int, runs: int) -> dict[str, list[float]]:
    """`agentapps run NAME --path sample.txt` for count-md and count-direct, alternating."""
    exe = str(console_script())
    cli: dict[str, list[float]] = {"count-md": [], "count-direct": []}
    for name in cli:
        proc = subprocess.run(
            [exe, "run", name, "--path", "sample.txt"],
            cwd=project, env=env, capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0 or proc.stdout.strip() != str(words):
            sys.exit(
                f"error: agentapps run {name} gave {proc.returncode}, "
                f"{proc.stdout!r}, {proc.stderr[-500:]!r}"
            )
    for i in range(runs + 1):  # the first round is a warm-up
        for name, times in cli.items():
            elapsed = time_process([exe, "run", name, "--path", "sample.txt"], cwd=project, env=env)
            if i:
                times.append(elapsed)
    return cli


def stats_row(label: str, values: list[float], fmt=dur) -> list[str]:
    return [label, str(len(values)), fmt(median(values)), fmt(min(values)), fmt(max(values))]


def whole_path(runner: asyncio.Runner, root, project: Path, env: dict[str, str], words: int,
               reps: Reps) -> dict[str, float]:
    """Section 4: a markdown skill through the agent against a code skill making the same calls,
    in process and as processes, and the imports only the markdown path pays."""
    whole = round_robin(runner, root, [
        ("count-md", {"path": "sample.txt"}, words),
        ("count-direct", {"path": "sample.txt"}, words),
    ], reps.whole)
    cli = cli_runs(project, env, words, reps.cli)
    exe = str(console_script())
    imports = {
        name: top_imports(exe, ["run", name, "--path", "sample.txt"], project, env, reps.imports)
        for name in cli
    }
    md_in, direct_in = median(whole["count-md"]), median(whole["count-direct"])
    md_cli, direct_cli = median(cli["count-md"]), median(cli["count-direct"])
    print()
    print(f"4. count the words of sample.txt ({len(sample_text())} bytes, {words} words): "
          "markdown skill through the agent vs a code skill")
    table(
        ["", "n", "median", "min", "max"],
        [
            stats_row("in process: count-md (agent, 1 scripted turn)", whole["count-md"]),
            stats_row("in process: count-direct (code skill)", whole["count-direct"]),
            ["in process: difference / ratio", "", f"+{dur(md_in - direct_in)}",
             f"{md_in / direct_in:.0f}x", ""],
            stats_row("CLI: agentapps run count-md", cli["count-md"], ms),
            stats_row("CLI: agentapps run count-direct", cli["count-direct"], ms),
            ["CLI: difference / ratio", "", f"+{ms(md_cli - direct_cli)}",
             f"{md_cli / direct_cli:.1f}x", ""],
        ],
    )
    print_extra_imports(imports["count-md"], imports["count-direct"], reps.imports)
    return {"md_in": md_in, "direct_in": direct_in, "md_cli": md_cli, "direct_cli": direct_cli}


def print_extra_imports(md_imp: dict[str, float], direct_imp: dict[str, float], runs: int) -> None:
    extra = sorted(
        (
            (name, cum - direct_imp.get(name, 0))
            for name, cum in md_imp.items()
            if name != "(total)" and (name not in direct_imp or cum - direct_imp[name] > 1000)
        ),
        key=lambda kv: -kv[1],
    )
    print()
    print(
        f"Imports only the markdown path pays (`-X importtime`, top-level imports, cumulative, "
        f"median of {runs}): {ms((md_imp['(total)'] - direct_imp['(total)']) / 1e6)} more in "
        f"all ({ms(md_imp['(total)'] / 1e6)} vs {ms(direct_imp['(total)'] / 1e6)}); the largest:"
    )
    table(
        ["module", "count-md", "count-direct"],
        [
            [name, ms(md_imp[name] / 1e6),
             ms(direct_imp[name] / 1e6) if name in direct_imp else "-"]
            for name, _ in extra[:10]
        ],
    )


def print_verdict(f: dict[str, float]) -> None:
    last = TURN_COUNTS[-1]
    print(
        f"VERDICT: INFO - first snippet {dur(f['first'])} in a fresh host process (sandbox "
        f"process start included; import {dur(f['import'])}), {dur(f['warm'])} for another "
        f"Sandbox in a warm host; invoke from agent code {us(f['seq'])} (bridge alone "
        f"{us(f['seq_bridge'])}; the same invoke from Python {us(f['py_code'])}), Promise.all "
        f"{us(f['all'])}/call; per turn {dur(f['turn'])} (T={last}), fixed {dur(f['fixed'])}, "
        f"of a turn {f['sandbox_share']:.0%} is Sandbox.run and {f['chain_share']:.0%} the "
        f"callback refs' middleware chains; count-md {dur(f['md_in'])} vs count-direct "
        f"{dur(f['direct_in'])} in process, {ms(f['md_cli'])} vs {ms(f['direct_cli'])} as CLI "
        f"(issue 4 sets no target)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (about 1/8; no target depends on them)")
    reps = Reps.of(parser.parse_args().quick)

    header("agent: first snippet, invoke from agent code, per-turn overhead, markdown vs direct")
    words = len(sample_text().split())
    with tempfile.TemporaryDirectory(prefix="aa-bench-agent-") as tmp_name:
        tmp = Path(tmp_name)
        project = make_project(tmp)
        from agentapps.boot import bootstrap

        figures = first_snippet(tmp, reps)
        root = bootstrap(project)
        with asyncio.Runner() as runner:
            figures.update(round_trips(runner, root, reps))
            figures.update(per_turn(runner, root, reps, figures))
            figures.update(where_turns_go(runner, root, reps, words, figures))
            counts_and_profile(runner, root, reps)
            figures.update(whole_path(runner, root, project, clean_env(tmp / "home"), words, reps))
        os.chdir(tempfile.gettempdir())
    print()
    footer()
    print_verdict(figures)


if __name__ == "__main__":
    main()
