"""Invoke overhead: a no-op code skill invoked through the full pipeline vs pluggy and a direct call.

In a temporary project, a driver code skill loops `await ctx.manager.invoke("noop", {"x": i})`
10 000 times (timed inside the driver, after a warm-up so modules, cascades and validators are
cached). Two baselines run in the same process: pluggy calling one hook through 5 wrapper hooks,
one of which validates the same args with the validator the pipeline really uses
(`agentapps.schemas.validation.validate`), and a direct call (that validator, then `run`). Target:
pipeline / pluggy <= 2x. Then one run of 2 000 invokes is profiled with cProfile (top 12 by
cumulative time, and top 12 by own time) so we know what to optimise.

    .venv/bin/python benchmarks/invoke_overhead.py [--quick] [--calls N] [--reps R]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib.util
import os
import pstats
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _common import footer, header, median, profile_rows, table, target, us, verdict

TARGET_RATIO = 2.0  # pipeline / pluggy
PARAMS = {"type": "object", "properties": {"x": {"type": "integer"}}}

NOOP = f"""
frontmatter = {{
    "name": "noop",
    "description": "Benchmark: does nothing but return its argument.",
    "metadata": {{"params": {PARAMS!r}}},
}}


def run(ctx, args):
    return args["x"]
"""

DRIVER = """
import time

frontmatter = {
    "name": "driver",
    "description": "Benchmark: invoke noop n times through the full pipeline and time the loop.",
    "metadata": {"params": {"type": "object", "properties": {"n": {"type": "integer"}}}},
}


async def run(ctx, args):
    n = args["n"]
    total = 0
    start = time.perf_counter()
    for i in range(n):
        total += await ctx.manager.invoke("noop", {"x": i})
    elapsed = time.perf_counter() - start
    if total != n * (n - 1) // 2:
        raise RuntimeError(f"noop returned wrong values: sum {total}")
    return {"seconds": elapsed, "n": n}
"""


def make_project(tmp: Path) -> Path:
    project = tmp / "proj"
    (project / ".agent-apps").mkdir(parents=True)
    (tmp / "home").mkdir()
    (project / "noop.skill.py").write_text(textwrap.dedent(NOOP).lstrip(), encoding="utf-8")
    (project / "driver.skill.py").write_text(textwrap.dedent(DRIVER).lstrip(), encoding="utf-8")
    for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
        del os.environ[key]
    os.environ["HOME"] = str(tmp / "home")
    os.chdir(project)
    return project


def pipeline_seconds(root, n: int) -> float:
    from agentapps.context.manager import invoke_root

    result = asyncio.run(invoke_root(root, "driver", {"n": n}))
    return result["seconds"] / n


def chain_of(root, name: str) -> str:
    """The middleware a call of `name` goes through (from the bundled skill-describe)."""
    from agentapps.context.manager import invoke_root

    try:
        info = asyncio.run(invoke_root(root, "skill-describe", {"name": name}))
        return " -> ".join(info["chain"])
    except Exception as exc:  # noqa: BLE001 - informational only
        return f"unknown ({type(exc).__name__}: {exc})"


def fast_validator():
    """The validator the pipeline's validate-args really uses, with its cache."""
    from agentapps.schemas.validation import validate

    cache: dict = {}
    return lambda args: validate(args, PARAMS, cache, skill="noop", where="params")


def direct_seconds(fn, validate, n: int) -> float:
    total = 0
    start = time.perf_counter()
    for i in range(n):
        args = {"x": i}
        validate(args)
        total += fn(None, args)
    elapsed = time.perf_counter() - start
    assert total == n * (n - 1) // 2
    return elapsed / n


def pluggy_hook(fn, validate):
    """A pluggy PluginManager whose `call` hook runs through 5 wrappers, one validating args."""
    import pluggy

    spec, impl = pluggy.HookspecMarker("bench"), pluggy.HookimplMarker("bench")

    class Spec:
        @spec(firstresult=True)
        def call(self, args):
            """Run a skill."""

    def wrapper(check):
        class Wrapper:
            @impl(wrapper=True)
            def call(self, args):
                if check:
                    validate(args)
                return (yield)
        return Wrapper()

    class Leaf:
        @impl
        def call(self, args):
            return fn(None, args)

    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(Spec)
    pm.register(Leaf())
    for i in range(5):
        pm.register(wrapper(i == 0))
    return pm.hook.call


def pluggy_seconds(hook, n: int) -> float:
    total = 0
    start = time.perf_counter()
    for i in range(n):
        total += hook(args={"x": i})
    elapsed = time.perf_counter() - start
    assert total == n * (n - 1) // 2
    return elapsed / n


HARNESS = ("asyncio" + os.sep, "invoke_overhead.py")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="3 repetitions instead of 5")
    parser.add_argument(
        "--calls", type=int, default=10_000, help="invokes per repetition (default 10000)"
    )
    parser.add_argument("--reps", type=int, help="repetitions (default 5, or 3 with --quick)")
    parser.add_argument(
        "--profile-calls", type=int, default=2_000, help="invokes in the profiled run"
    )
    opts = parser.parse_args()
    reps = opts.reps or (3 if opts.quick else 5)

    header(
        f"invoke overhead: {opts.calls} x ctx.manager.invoke('noop', {{'x': i}}) "
        "vs a validated direct call"
    )
    with tempfile.TemporaryDirectory(prefix="aa-bench-invoke-") as tmp:
        project = make_project(Path(tmp))
        from agentapps.boot import bootstrap

        spec = importlib.util.spec_from_file_location(
            "bench_noop_direct", project / "noop.skill.py"
        )
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        validate = fast_validator()
        hook = pluggy_hook(module.run, validate)

        root = bootstrap(project)
        pipeline_seconds(root, 200)  # warm-up: import noop, cascade and chain plans, validators
        print(f"noop's chain: {chain_of(root, 'noop')}")
        direct_seconds(module.run, validate, 200)
        pluggy_seconds(hook, 200)

        pipe: list[float] = []
        plug: list[float] = []
        direct: list[float] = []
        for _ in range(reps):
            pipe.append(pipeline_seconds(root, opts.calls))
            plug.append(pluggy_seconds(hook, opts.calls))
            direct.append(direct_seconds(module.run, validate, opts.calls))

        profiler = cProfile.Profile()
        profiler.enable()
        pipeline_seconds(root, opts.profile_calls)
        profiler.disable()
        os.chdir(tempfile.gettempdir())

    mp, mg, md = median(pipe), median(plug), median(direct)
    ratio = mp / mg
    print()
    table(
        ["path", "calls x reps", "median per call", "min", "max"],
        [
            [
                "pipeline: ctx.manager.invoke",
                f"{opts.calls} x {reps}",
                us(mp),
                us(min(pipe)),
                us(max(pipe)),
            ],
            [
                "pluggy: 5 wrappers (one validates) + hook",
                f"{opts.calls} x {reps}",
                us(mg),
                us(min(plug)),
                us(max(plug)),
            ],
            [
                "direct: validate + run",
                f"{opts.calls} x {reps}",
                us(md),
                us(min(direct)),
                us(max(direct)),
            ],
            ["ratio pipeline / pluggy", "", f"{ratio:.1f}x", "", ""],
        ],
    )

    stats = pstats.Stats(profiler, stream=sys.stdout)
    print()
    print(
        f"cProfile of one run of {opts.profile_calls} invokes (the profiler inflates times),"
        " top 12 by cumulative time\n(the asyncio event loop and this script's own frames, which"
        " wrap everything, are left out):"
    )
    table(
        ["function", "ncalls", "own", "cumulative"], profile_rows(stats, 3, 12, harness=HARNESS)
    )
    print()
    print("top 12 by own time (tottime):")
    table(["function", "ncalls", "own", "cumulative"], profile_rows(stats, 2, 12))
    print()
    footer()
    target("one invoke through the default pipeline vs pluggy (5 wrappers, one validating)",
           ratio, TARGET_RATIO, detail=f"{us(mp)} vs {us(mg)}")
    verdict(
        ratio <= TARGET_RATIO,
        f"{us(mp)} per invoke vs {us(mg)} through pluggy = {ratio:.1f}x (target <= {TARGET_RATIO:g}x); "
        f"direct validated call {us(md)}",
    )


if __name__ == "__main__":
    main()
