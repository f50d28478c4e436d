"""`agentapps serve` under load: 50 clients calling /invocations of a code skill for 30 s.

Measured in the same run, on the same code skill (`echo`, which returns its argument):
  in-process  `agentapps run -q echo --text x` called again and again through `agentapps.cli.main`
              in one Python process (bootstrap, the pipeline, the run log, printing): the baseline;
  serve x1    one client calling POST /invocations of a running `agentapps serve`, one call at a time;
  serve x50   50 clients at once (httpx2, one connection each) for the given time.
Reported: errors (the target is none), p50/p99 latency and throughput, and the ratios to the
baseline. The load generator runs on the same 2 cores as the server, so throughput is a floor.

    .venv/bin/python benchmarks/serve.py [--seconds 30] [--clients 50] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import clean_env, footer, header, ms, percentile, table, verdict

ECHO = """
frontmatter = {"name": "echo", "description": "Returns its text.", "metadata": {
    "params": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}

def run(ctx, args):
    return {"text": args["text"]}
"""
IN_PROCESS = """
import io, os, sys, time
from agentapps.cli import dispatch
n, out = int(sys.argv[1]), []
real = sys.stdout
for _ in range(n):
    sys.stdout = io.StringIO()
    start = time.perf_counter()
    code = dispatch(["run", "-q", "echo", "--text", "x"])
    out.append(time.perf_counter() - start)
    sys.stdout = real
    assert code == 0, code
print(" ".join(f"{t:.6f}" for t in out))
"""


def in_process(project: Path, env: dict[str, str], calls: int) -> list[float]:
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, str(calls)], cwd=project, env=env, check=True,
                          capture_output=True, text=True)
    return [float(t) for t in done.stdout.split()][calls // 10:]  # the first calls warm caches


def start(project: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "serve", "--port", "0", "--concurrency", "1000"],
                            cwd=project, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"serving (http://\S+)/", line)
        if found:
            return proc, found.group(1)
    raise SystemExit("error: the server did not start")


async def load(url: str, clients: int, seconds: float) -> tuple[list[float], int, float]:
    import httpx2

    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds
    body = {"skill": "echo", "args": {"text": "x"}}

    async def client() -> None:
        nonlocal errors
        async with httpx2.AsyncClient(base_url=url, timeout=60) as http:
            while time.perf_counter() < stop:
                start = time.perf_counter()
                try:
                    response = await http.post("/invocations", json=body)
                    ok = response.status_code == 200 and response.json()["result"] == {"text": "x"}
                except httpx2.HTTPError:
                    ok = False
                latencies.append(time.perf_counter() - start)
                errors += not ok

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, errors, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="3 s of load and fewer baseline calls")
    opts = parser.parse_args()
    seconds = 3.0 if opts.quick else opts.seconds
    header(f"agentapps serve: {opts.clients} clients x {seconds:g} s of POST /invocations (echo code skill)")
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        (project / ".agent-apps").mkdir(parents=True)
        home.mkdir()
        (project / "echo.skill.py").write_text(ECHO)
        env = clean_env(home)
        base = in_process(project, env, 200 if opts.quick else 1000)
        base_rate = len(base) / sum(base)
        proc, url = start(project, env)
        try:
            single, single_errors, single_took = asyncio.run(load(url, 1, min(seconds, 5.0)))
            loaded, errors, took = asyncio.run(load(url, opts.clients, seconds))
        finally:
            proc.terminate()
            proc.wait(10)
        errors += single_errors
    rate = len(loaded) / took
    rows = [["in-process agentapps run", len(base), ms(percentile(base, 50)), ms(percentile(base, 99)),
             f"{base_rate:.0f}/s", "1.00", "1.00"],
            ["serve x1", len(single), ms(percentile(single, 50)), ms(percentile(single, 99)),
             f"{len(single) / single_took:.0f}/s",
             f"{percentile(single, 50) / percentile(base, 50):.2f}", f"{len(single) / single_took / base_rate:.2f}"],
            [f"serve x{opts.clients}", len(loaded), ms(percentile(loaded, 50)), ms(percentile(loaded, 99)),
             f"{rate:.0f}/s", f"{percentile(loaded, 50) / percentile(base, 50):.2f}", f"{rate / base_rate:.2f}"]]
    table(["path", "calls", "p50", "p99", "throughput", "p50 / base", "throughput / base"], rows)
    print(f"errors under load: {errors}")
    footer()
    verdict(errors == 0, f"{errors} errors in {len(loaded) + len(single)} served calls (target: none); "
                         f"{rate:.0f} calls/s at {opts.clients} clients = {rate / base_rate:.2f}x in-process")


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parent)
    main()
