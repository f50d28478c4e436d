"""`state-set` on the Redis store against the same work done bare: one EVALSHA from redis-py
(issue 23), against the Redis server at AGENTAPPS_REDIS_URL (default redis://127.0.0.1:6379/0).

A state-set on Redis is one Lua script (agentapps.stores.redisstate.SET): compare-and-swap against
`expect`, write the value and its write token, set or clear the time-to-live, publish on the key's
channel. Four loops of N writes of the same JSON value over 10 keys, with `expect` (the CAS path)
and a time-to-live, in one process, taking turns in R rounds:

  EVALSHA      redis-py's `execute_command("EVALSHA", ...)` with that script and the same arguments
               (the value's canonical JSON and a fresh token made per call, as the store does);
  EVALSHA, kept connection
               the same on one connection the loop keeps (`send_command` + `read_response`), as the
               store sends its scripts: shown so that what the store saves on redis-py's pooled path
               and what the pipeline adds can be told apart (the target is against plain EVALSHA);
  store.set    `RedisStateStore.set` called directly (no pipeline);
  state-set    `await ctx.manager.invoke("state-set", {key, value, expect, ttl, store: "redis"})`
               from a driver code skill, through the default pipeline.

Each write expects the value the previous write of that key left, so every CAS succeeds. Figure:
the median per-round ratio of time per write to EVALSHA's. Target (issue 23): state-set within
1.3x of EVALSHA; store.set is shown to split the cost between the store and the pipeline.

    .venv/bin/python benchmarks/redis_state.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from _common import dur, footer, header, median, table, target, verdict

URL = os.environ.get("AGENTAPPS_REDIS_URL") or "redis://127.0.0.1:6379/0"
LIMIT = 1.3
KEYS = 10
TTL_S = 600
VALUE = {"status": "running", "step": 3, "owner": "worker-1", "progress": [0.25, 0.5]}

MAIN = """---
name: {namespace}
description: Benchmark project.
metadata:
  role: main
  stores: {{state: redis}}
---
Benchmark.
"""

DRIVER = """
import time

frontmatter = {"name": "bench-driver", "metadata": {"params": {"type": "object"}}}


async def run(ctx, args):
    invoke, value, ttl, n = ctx.manager.invoke, args["value"], args["ttl"], args["n"]
    previous = args["previous"]
    start = time.perf_counter()
    for i in range(n):
        key = f"job:{i % 10}"
        current = dict(value, step=i)
        await invoke("state-set", {"key": key, "value": current, "expect": previous[key], "ttl": ttl,
                                   "store": "redis"})
        previous[key] = current
    return {"seconds": time.perf_counter() - start, "previous": previous}
"""


def canonical(value: Any) -> str:
    from agentapps.stores.keys import canonical as ours

    return ours(value)


class Bench:
    def __init__(self, tmp: Path) -> None:
        self.namespace = f"bench-evalsha-{os.getpid()}"
        self.project = tmp / "proj"
        (self.project / ".agent-apps").mkdir(parents=True)
        (tmp / "home").mkdir()
        (self.project / "main.skill.md").write_text(MAIN.format(namespace=self.namespace), encoding="utf-8")
        (self.project / "bench-driver.skill.py").write_text(textwrap.dedent(DRIVER).lstrip(), encoding="utf-8")
        for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
            del os.environ[key]
        os.environ.update(HOME=str(tmp / "home"), AGENTAPPS_REDIS_URL=URL, AGENTAPPS_RUN_LOG="off")
        os.chdir(self.project)
        from agentapps.boot import bootstrap
        from agentapps.stores.redisstate import SET

        self.root = bootstrap(self.project)
        import redis

        self.client = redis.Redis.from_url(URL)
        self.script = SET
        self.sha = self.client.script_load(SET)
        self.previous: dict[str, dict[str, Any]] = {}  # per loop: the value each key holds now

    def prefix(self) -> str:
        return f"agentapps:{self.namespace}:"

    def reset(self) -> None:
        """Every key holds VALUE: each loop then expects what it wrote last."""
        from agentapps.stores.state import store_for as state_for

        store = state_for(self.root.globals, "redis")
        for i in range(KEYS):
            store.set(f"job:{i}", VALUE)
        self.previous = {f"job:{i}": dict(VALUE) for i in range(KEYS)}

    def evalsha(self, n: int) -> float:
        execute, sha, prefix, previous = self.client.execute_command, self.sha, self.prefix(), self.previous
        ttl = str(TTL_S * 1000)
        start = time.perf_counter()
        for i in range(n):
            key = f"job:{i % KEYS}"
            current = dict(VALUE, step=i)
            expected = canonical(previous[key])
            done = execute("EVALSHA", sha, 1, f"{prefix}state:{key}", canonical(current), ttl, "equal",
                           expected, secrets.token_hex(8), f"{prefix}state-set:{key}")
            if not done:
                sys.exit(f"error: EVALSHA refused the write of {key}")
            previous[key] = current
        return (time.perf_counter() - start) / n

    def evalsha_kept(self, n: int) -> float:
        conn = self.client.connection_pool.get_connection()
        send, read, sha, prefix, previous = conn.send_command, conn.read_response, self.sha, self.prefix(), self.previous
        ttl = str(TTL_S * 1000)
        try:
            start = time.perf_counter()
            for i in range(n):
                key = f"job:{i % KEYS}"
                current = dict(VALUE, step=i)
                expected = canonical(previous[key])
                send("EVALSHA", sha, 1, f"{prefix}state:{key}", canonical(current), ttl, "equal", expected,
                     secrets.token_hex(8), f"{prefix}state-set:{key}")
                if not read():
                    sys.exit(f"error: EVALSHA refused the write of {key}")
                previous[key] = current
            return (time.perf_counter() - start) / n
        finally:
            self.client.connection_pool.release(conn)

    def store_set(self, n: int) -> float:
        from agentapps.stores.state import store_for as state_for

        store, previous = state_for(self.root.globals, "redis"), self.previous
        start = time.perf_counter()
        for i in range(n):
            key = f"job:{i % KEYS}"
            current = dict(VALUE, step=i)
            store.set(key, current, expect=previous[key], ttl=TTL_S)
            previous[key] = current
        return (time.perf_counter() - start) / n

    def state_set(self, n: int) -> float:
        from agentapps.context.manager import invoke_root

        args = {"n": n, "value": VALUE, "ttl": TTL_S * 1000, "previous": self.previous}
        result = asyncio.run(invoke_root(self.root, "bench-driver", args))
        self.previous = result["previous"]
        return float(result["seconds"]) / n

    def drop(self) -> None:
        names = list(self.client.scan_iter(match=f"{self.prefix()}*", count=1000))
        if names:
            self.client.delete(*names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (5 instead of 15)")
    quick = parser.parse_args().quick
    rounds, batch = (5, 1000) if quick else (15, 2000)
    header(f"state-set on Redis vs one EVALSHA from redis-py, against {URL}")
    with tempfile.TemporaryDirectory(prefix="aa-bench-evalsha-") as tmp:
        try:
            b = Bench(Path(tmp))
        except Exception as exc:  # noqa: BLE001 - no server: say so and stop
            verdict(None, f"skipped: no Redis at {URL} ({type(exc).__name__}: {exc})")
            return
        try:
            b.reset()
            runs = {"EVALSHA": b.evalsha, "EVALSHA, kept connection": b.evalsha_kept, "store.set": b.store_set,
                    "state-set": b.state_set}
            for run in runs.values():  # warm-up: imports, the script cache, validators
                run(200)
            times: dict[str, list[float]] = {name: [] for name in runs}
            names = list(runs)
            for r in range(rounds):
                for name in names[r % len(names):] + names[: r % len(names)]:
                    times[name].append(runs[name](batch))
            stored = b.client.hget(f"{b.prefix()}state:job:0", "v")
            if json.loads(stored or "null") != b.previous["job:0"]:
                sys.exit(f"error: job:0 holds {stored!r}, not the last value written")
        finally:
            b.drop()
            os.chdir(tempfile.gettempdir())
    ratio = {name: median([t / e for t, e in zip(times[name], times["EVALSHA"], strict=True)]) for name in times}
    table(["writer", "median per write", "ratio to EVALSHA (median of rounds)"],
          [[name, dur(median(times[name])), f"{ratio[name]:.2f}x"] for name in times])
    print()
    footer()
    ok = target("state-set on Redis vs one EVALSHA from redis-py (CAS+TTL+publish)", ratio["state-set"], LIMIT,
                detail=f"{dur(median(times['state-set']))} vs {dur(median(times['EVALSHA']))}")
    kept = median([t / k for t, k in zip(times["state-set"], times["EVALSHA, kept connection"], strict=True)])
    verdict(ok, f"state-set {ratio['state-set']:.2f}x, store.set {ratio['store.set']:.2f}x the bare EVALSHA "
                f"({dur(median(times['EVALSHA']))} per write; target <= {LIMIT:g}x); state-set {kept:.2f}x "
                "EVALSHA on a kept connection")


if __name__ == "__main__":
    main()
