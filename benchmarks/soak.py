"""Memory of long-lived processes under many agent runs: `agentapps serve` and `agentapps worker`.

Each run is a whole agent run through the full pipeline: a markdown skill whose model is the
offline `agent-scripted` provider answering in one turn (its callback refs, trace, spend, context
and run state are made and must be freed; no snippet runs, so no sandbox process is started and the
figure is the host's own). The resident set size (VmRSS) of the server or worker process is read
after `--first` runs and again after `--then` runs: the process holds memory flat when the second
is within `--slack` MB of the first (issue 26: "within a few MB").

- serve:  POST /invocations of the skill from 4 clients at once;
- worker: events added to a Redis stream, handled by one `agentapps worker` (concurrency 4); needs
          Redis (AGENTAPPS_TEST_REDIS_URL or redis://127.0.0.1:6379/0), else that part is skipped.

    .venv/bin/python benchmarks/soak.py [--first 1000] [--then 5000] [--slack 5] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import clean_env, footer, header, table, verdict

REDIS_URL = os.environ.get("AGENTAPPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SKILL = """---
name: think
description: One scripted agent turn.
metadata:
  params: {type: object, properties: {event: {type: object}}}
  model: {agent: agent-scripted, script: think.turns.json}
---
Think about it.
"""
TURNS = {"turns": [{"text": "Thought about it.", "usage": {"inputTokens": 100, "outputTokens": 10}}]}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"error: no VmRSS for process {pid}")


def project_in(tmp: Path, namespace: str | None = None) -> tuple[Path, dict[str, str]]:
    project, home = tmp / "proj", tmp / "home"
    (project / ".agent-apps").mkdir(parents=True)
    home.mkdir()
    (project / "think.skill.md").write_text(SKILL)
    (project / "think.turns.json").write_text(json.dumps(TURNS))
    if namespace is not None:
        (project / "main.skill.md").write_text(f"---\nname: {namespace}\ndescription: Soak.\nmetadata:\n"
                                               "  role: main\n  stores: {default: redis}\n---\nMain.\n")
    # the run log is a side record written in batches: off, so only the runs themselves are measured
    return project, clean_env(home, AGENTAPPS_RUN_LOG="off", AGENTAPPS_REDIS_URL=REDIS_URL)


# -- serve -------------------------------------------------------------------------------------------


async def post_runs(url: str, count: int, clients: int = 4) -> int:
    import httpx2

    errors = 0
    left = count

    async def client() -> None:
        nonlocal errors, left
        async with httpx2.AsyncClient(base_url=url, timeout=60) as http:
            while left > 0:
                left -= 1
                response = await http.post("/invocations", json={"skill": "think"})
                errors += response.status_code != 200 or response.json().get("result") != "Thought about it."

    await asyncio.gather(*(client() for _ in range(clients)))
    return errors


def soak_serve(first: int, then: int) -> tuple[list[float], int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        project, env = project_in(Path(tmp))
        proc = subprocess.Popen([sys.executable, "-m", "agentapps", "serve", "--port", "0", "--concurrency", "64"],
                                cwd=project, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        url = None
        for line in proc.stderr:
            found = re.search(r"serving (http://\S+)/", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            raise SystemExit("error: the server did not start")
        began = time.perf_counter()
        try:
            errors = asyncio.run(post_runs(url, first))
            at_first = rss_mb(proc.pid)
            errors += asyncio.run(post_runs(url, then - first))
            at_then = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)
        return [at_first, at_then], errors, time.perf_counter() - began


# -- worker ------------------------------------------------------------------------------------------


def redis_client() -> object | None:
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        client.ping()
        return client
    except Exception:  # noqa: BLE001 - no Redis: the worker part is skipped
        return None


def emit(project: Path, env: dict[str, str], count: int) -> None:
    code = ("import sys; from agentapps.boot import bootstrap; from agentapps.events.streams import streams_for\n"
            "bus = streams_for(bootstrap().globals)\n"
            "for i in range(int(sys.argv[1])): bus.emit('jobs', 'job', {'n': i})\n")
    subprocess.run([sys.executable, "-c", code, str(count)], cwd=project, env=env, check=True)


def wait_handled(client: object, namespace: str, total: int, proc: subprocess.Popen[str], limit: float) -> None:
    """Until the worker's group has read and acknowledged `total` entries."""
    deadline = time.monotonic() + limit
    keys = [k for k in client.scan_iter(match=f"agentapps:{namespace}:*jobs*")]  # type: ignore[attr-defined]
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"error: the worker exited ({proc.returncode})")
        for key in keys:
            if client.type(key) != b"stream":  # type: ignore[attr-defined]
                continue
            groups = client.xinfo_groups(key)  # type: ignore[attr-defined]
            if groups and all(g.get("entries-read") == total and g.get("pending") == 0 for g in groups):
                return
        keys = keys or [k for k in client.scan_iter(match=f"agentapps:{namespace}:*jobs*")]  # type: ignore[attr-defined]
        time.sleep(0.2)
    raise SystemExit(f"error: the worker did not handle {total} events in {limit:g} s")


def soak_worker(first: int, then: int) -> tuple[list[float], int, float] | None:
    client = redis_client()
    if client is None:
        return None
    namespace = f"soak-{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory() as tmp:
        project, env = project_in(Path(tmp), namespace)
        began = time.perf_counter()
        emit(project, env, first)
        proc = subprocess.Popen([sys.executable, "-m", "agentapps", "worker", "jobs", "--group", "g", "--handler",
                                 "think", "--concurrency", "4", "-q"], cwd=project, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_handled(client, namespace, first, proc, 600)
            at_first = rss_mb(proc.pid)
            emit(project, env, then - first)
            wait_handled(client, namespace, then, proc, 1800)
            at_then = rss_mb(proc.pid)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
            for key in client.scan_iter(match=f"agentapps:{namespace}:*"):  # type: ignore[attr-defined]
                client.delete(key)  # type: ignore[attr-defined]
        failed = len(re.findall(r"failed \(delivery", err or ""))
        return [at_first, at_then], failed, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--first", type=int, default=1000)
    parser.add_argument("--then", type=int, default=5000)
    parser.add_argument("--slack", type=float, default=5.0, help="MB the second reading may exceed the first")
    parser.add_argument("--quick", action="store_true", help="after 200 and 1000 runs")
    opts = parser.parse_args()
    first, then = (200, 1000) if opts.quick else (opts.first, opts.then)
    header(f"soak: RSS of serve and worker after {first} and after {then} agent runs")
    rows, ok, parts = [], True, []
    for door, soak in (("serve", soak_serve), ("worker", soak_worker)):
        found = soak(first, then)
        if found is None:
            rows.append([door, "-", "-", "-", "skipped: no Redis", "-"])
            parts.append(f"{door} skipped (no Redis)")
            continue
        (a, b), errors, took = found
        grew = b - a
        met = grew <= opts.slack and errors == 0
        ok = ok and met
        rows.append([door, f"{a:.1f} MB", f"{b:.1f} MB", f"{grew:+.1f} MB", f"{errors} errors", f"{took:.0f} s"])
        parts.append(f"{door} {a:.1f} -> {b:.1f} MB ({grew:+.1f} MB, <= {opts.slack:g} MB {'met' if met else 'missed'}"
                     f"{'' if not errors else f'; {errors} errors'})")
        print(f"TARGET: {door} RSS after {then} vs after {first} agent runs | {grew:+.1f} MB | <= {opts.slack:g} MB | "
              f"{'met' if met else 'missed'}")
    table(["door", f"after {first}", f"after {then}", "growth", "errors", "took"], rows)
    footer()
    verdict(ok, "; ".join(parts))


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parent)
    main()
