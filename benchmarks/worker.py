"""`agentapps worker` against a bare redis-py consumer doing the same work (issue 23).

The work: N events already in a topic's stream (emitted the way `event-emit` does), read by a
consumer group and acknowledged, each handed to a handler that does nothing.
  bare       a plain redis-py loop in a process of its own: XREADGROUP (COUNT = the concurrency,
             BLOCK 1 s), json.loads of each entry's body, a no-op call, one XACK of the batch;
  agentapps  `agentapps worker TOPIC --group g --handler noop --concurrency C`: each event a run of
             the code skill `noop` through the full pipeline, with its run-log record.
With 1 and then 2 consumers of each kind, taking turns (bare 1, agentapps 1, bare 2, agentapps 2),
each on a fresh stream. No consumer can read before the window opens: N - 1 events wait in the
stream behind a group that starts at its end; once every consumer has said it is ready, the group is
set back to the stream's start (XGROUP SETID 0) and the last event is emitted, which wakes the
consumers that wait in XREADGROUP. The window runs from that moment to the one the group has read
and acknowledged all N (polled with XINFO GROUPS every 2 ms on one connection; the project is booted
and the last event's emitter connected before the window opens). (Until 2026-11-28 the events were
there before the consumers started, and the first consumer of two could read many of them before the
window opened: the bare loop's figure with 2 consumers ranged from 28k to 1.1M events/s.)

Targets: agentapps' events/s >= 0.6x the bare loop's, with 1 and with 2 consumers.

    .venv/bin/python benchmarks/worker.py [--quick] [--events N] [--concurrency C]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import footer, header, table, target, verdict
from scale_out import URL, Bench, stop_all, wait_until

LIMIT = 0.6
POLL = 0.002  # seconds between looks at the group: the window's end is known to about this much
BARE = """
import json, sys
import redis

url, key, group, consumer, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
client = redis.Redis.from_url(url)


def handle(event):
    return None


print("worker ready", file=sys.stderr, flush=True)
while True:
    got = client.xreadgroup(group, consumer, {key: ">"}, count=count, block=1000)
    ids = []
    for _, entries in got or []:
        for entry_id, fields in entries:
            handle(json.loads(fields[b"e"]))
            ids.append(entry_id)
    if ids:
        client.xack(key, group, *ids)
"""


def bare(b: Bench, script: Path, topic: str, workers: int, count: int, concurrency: int) -> float:
    procs = [subprocess.Popen([sys.executable, str(script), b.url, b.stream(topic), "g", f"c{i}", str(concurrency)],
                              env=b.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for i in range(workers)]
    return _window(b, procs, topic, count)


def ours(b: Bench, topic: str, workers: int, count: int, concurrency: int) -> float:
    procs = [b.worker(topic, "--group", "g", "--handler", "noop", "--concurrency", str(concurrency), "--json")
             for _ in range(workers)]
    return _window(b, procs, topic, count)


def _held(b: Bench, topic: str, count: int) -> None:
    """All but one of the `count` events, behind the group `g` that starts at the stream's end."""
    b.emit(topic, count - 1)
    b.client().xgroup_create(b.stream(topic), "g", id="$", mkstream=True)


def _window(b: Bench, procs: list[subprocess.Popen[str]], topic: str, count: int) -> float:
    for proc in procs:  # each says it is ready once connected
        line = proc.stderr.readline() if proc.stderr else ""
        if not line.startswith("worker "):
            sys.exit(f"error: a consumer did not start: {line}{proc.communicate()[1][-800:]}")
    from agentapps.events.streams import streams_for

    bus = streams_for(b.boot().globals)  # the project booted and both connected before the window opens
    client = b.client()
    client.ping()
    started = time.perf_counter()
    client.execute_command("XGROUP", "SETID", b.stream(topic), "g", "0", "ENTRIESREAD", "0")
    bus.emit(topic, "job", {"n": count - 1})  # wakes every consumer blocked in XREADGROUP
    # polled every POLL seconds on one connection: the quick run's window is about 60 ms
    ended = wait_until(lambda: b.group_done(topic, "g", count, client), step=POLL)
    stop_all(procs)
    return count / (ended - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 000 events per run (default 10 000)")
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=4)
    opts = parser.parse_args()
    count = opts.events or (2_000 if opts.quick else 10_000)
    header(f"agentapps worker vs a bare redis-py consumer: {count} events, concurrency {opts.concurrency}, "
           f"against {URL}")
    rates: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="aa-bench-worker-") as name:
        tmp = Path(name)
        b = Bench(tmp, f"bench-worker-{os.getpid()}")
        script = tmp / "bare.py"
        script.write_text(BARE)
        for key in [k for k in os.environ if k.startswith("AGENTAPPS_")]:
            del os.environ[key]
        os.environ["HOME"] = str(tmp / "home")
        os.chdir(b.root)
        try:
            for workers in (1, 2):
                for kind in ("bare", "agentapps"):
                    topic = f"{kind}-{workers}"
                    _held(b, topic, count)
                    rates[kind, workers] = (bare(b, script, topic, workers, count, opts.concurrency) if kind == "bare"
                                            else ours(b, topic, workers, count, opts.concurrency))
        finally:
            b.drop()
            os.chdir(tempfile.gettempdir())
    table(["consumers", "bare redis-py", "agentapps worker", "ratio"],
          [[w, f"{rates['bare', w]:,.0f} events/s", f"{rates['agentapps', w]:,.0f} events/s",
            f"{rates['agentapps', w] / rates['bare', w]:.2f}x"] for w in (1, 2)])
    footer()
    ok = [target(f"worker events/s vs bare redis-py loop, {w} consumer{'s' if w > 1 else ''}",
                 rates["agentapps", w] / rates["bare", w], LIMIT, at_most=False,
                 detail=f"{rates['agentapps', w]:,.0f} vs {rates['bare', w]:,.0f}") for w in (1, 2)]
    verdict(all(ok), " ; ".join(f"{w} consumer(s): {rates['agentapps', w] / rates['bare', w]:.2f}x" for w in (1, 2)))


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parent)
    main()
