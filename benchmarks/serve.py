"""`agentapps serve` against a bare Starlette + uvicorn app doing the same work (issue 23).

The work: POST /invocations with `{"skill": "echo", "args": {"text": "x"}}`, answered with JSON.
  bare       a Starlette app on uvicorn (log level warning, no access log: the settings serve uses)
             whose one route reads the JSON body and returns `{"result": args}`;
  agentapps  `agentapps serve` with its defaults (run log on, `--concurrency 8`, `--queue 64`), a
             code skill `echo` returning its args: the full pipeline per request.
Each is loaded by 10 and then 50 clients for the given time, the servers taking turns (bare 10,
agentapps 10, bare 50, agentapps 50), each started fresh and warmed up with 200 calls first. The
load generator is a plain asyncio HTTP/1.1 client, one keep-alive connection per client, in this
process (an HTTP client library's own cost would cap both at its rate: httpx's async client gave
the bare app 4 calls/s at 50 clients). It shares the 2 cores with the server, so every figure is
a floor; the ratios are what is compared. Any answer other than 200 with the expected body
(a 429 included) is an error.

Targets: agentapps' throughput >= 0.5x the bare app's at 10 and at 50 clients; its p99 <= 3x the
bare app's; no errors.

    .venv/bin/python benchmarks/serve.py [--seconds 10] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import clean_env, footer, header, ms, percentile, table, target, verdict

ECHO = """
frontmatter = {"name": "echo", "description": "Returns its args.", "metadata": {
    "params": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}

def run(ctx, args):
    return args
"""
BARE = """
import socket, sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def invocations(request):
    data = await request.json()
    return JSONResponse({"result": data["args"]})

app = Starlette(routes=[Route("/invocations", invocations, methods=["POST"])])
sock = socket.socket()
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sock.bind(("127.0.0.1", 0))
sock.listen(512)
print(f"serving http://127.0.0.1:{sock.getsockname()[1]}/", file=sys.stderr, flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])
"""
BODY = json.dumps({"skill": "echo", "args": {"text": "x"}}).encode()
LIMITS = {"throughput": 0.5, "p99": 3.0}


def start(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], tuple[str, int]]:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"serving http://([\d.]+):(\d+)/", line)
        if found:
            return proc, (found.group(1), int(found.group(2)))
    raise SystemExit(f"error: {argv} did not start")


async def call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> bool:
    writer.write(b"POST /invocations HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
    body = await reader.readexactly(length)
    return head.startswith(b"HTTP/1.1 200") and json.loads(body)["result"] == {"text": "x"}


async def load(where: tuple[str, int], clients: int, seconds: float) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(*where)
        try:
            while time.perf_counter() < stop:
                began = time.perf_counter()
                ok = await call(reader, writer, where[0])
                latencies.append(time.perf_counter() - began)
                errors += not ok
        finally:
            writer.close()

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, errors, time.perf_counter() - began


def measure(argv: list[str], cwd: Path, env: dict[str, str], clients: int, seconds: float) -> dict[str, float]:
    proc, where = start(argv, cwd, env)
    try:
        asyncio.run(load(where, 4, 0.5))  # warm-up: imports, the index, the first runs
        latencies, errors, took = asyncio.run(load(where, clients, seconds))
    finally:
        proc.terminate()
        proc.wait(15)
    return {"calls": len(latencies), "errors": errors, "rate": len(latencies) / took,
            "p50": percentile(latencies, 50), "p99": percentile(latencies, 99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="load per server and client count")
    parser.add_argument("--quick", action="store_true", help="2.5 s of load each")
    opts = parser.parse_args()
    seconds = 2.5 if opts.quick else opts.seconds
    header(f"agentapps serve vs a bare Starlette app: 10 and 50 clients x {seconds:g} s of POST /invocations")
    results: dict[tuple[str, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        (project / ".agent-apps").mkdir(parents=True)
        home.mkdir()
        (project / "echo.skill.py").write_text(ECHO)
        (Path(tmp) / "bare.py").write_text(BARE)
        env = clean_env(home)
        servers = {"bare": [sys.executable, str(Path(tmp) / "bare.py")],
                   "agentapps": [sys.executable, "-m", "agentapps", "serve", "--port", "0"]}
        for clients in (10, 50):
            for name, argv in servers.items():
                results[name, clients] = measure(argv, project, env, clients, seconds)
    rows = []
    for (name, clients), r in results.items():
        bare = results["bare", clients]
        rows.append([name, clients, int(r["calls"]), int(r["errors"]), f"{r['rate']:.0f}/s", ms(r["p50"]),
                     ms(r["p99"]), f"{r['rate'] / bare['rate']:.2f}x", f"{r['p99'] / bare['p99']:.2f}x"])
    table(["server", "clients", "calls", "errors", "throughput", "p50", "p99", "throughput / bare",
           "p99 / bare"], rows)
    footer()
    ok = []
    for clients in (10, 50):
        ours, bare = results["agentapps", clients], results["bare", clients]
        ok.append(target(f"serve throughput at {clients} clients vs bare Starlette", ours["rate"] / bare["rate"],
                         LIMITS["throughput"], at_most=False,
                         detail=f"{ours['rate']:.0f}/s vs {bare['rate']:.0f}/s"))
        ok.append(target(f"serve p99 at {clients} clients vs bare Starlette", ours["p99"] / bare["p99"],
                         LIMITS["p99"], detail=f"{ms(ours['p99'])} vs {ms(bare['p99'])}"))
    errors = int(sum(r["errors"] for r in results.values()))
    ok.append(target("errors (429s included)", errors, 0, unit="", digits=0))
    at = {c: results["agentapps", c]["rate"] / results["bare", c]["rate"] for c in (10, 50)}
    verdict(all(ok), f"throughput {at[10]:.2f}x / {at[50]:.2f}x the bare app at 10 / 50 clients, "
                     f"{errors} errors")


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parent)
    main()
