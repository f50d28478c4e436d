"""Child process for the state-store tests: `python state_worker.py MODE ROOT KEY [ARGS...]`
(ROOT: a state folder, or `redis:URL#NAMESPACE`)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from agentapps.core.atomic import FileLock
from agentapps.errors import ConflictError
from agentapps.stores.state import FileStateStore

PAD = 200_000


def big_value(counter: int) -> dict[str, object]:
    """A ~200 KB value whose padding is tied to its counter, so a mixed file cannot pass."""
    return {"counter": counter, "pad": chr(ord("a") + counter % 26) * PAD}


def cas(store: Any, key: str, increments: int, go: Path) -> None:
    while not go.exists():  # start together so the processes really contend
        time.sleep(0.001)
    conflicts = 0
    done = 0
    while done < increments:
        current = store.get(key)
        value = 0 if current is None else current
        try:
            store.set(key, value + 1, expect=current)
        except ConflictError:
            conflicts += 1
            continue
        done += 1
    print(conflicts, flush=True)


def hammer(store: FileStateStore, key: str) -> None:
    current = store.get(key)
    counter = -1 if current is None else current["counter"]
    print("ready", flush=True)
    while True:
        counter += 1
        store.set(key, big_value(counter))


def hammers(root: str, key: str) -> None:
    """One hammer per `go` line on stdin, forked from this process (a new interpreter for each of a
    test's 100 kills cost ~0.2 s apiece): each prints `ready PID` and rewrites `key` until it is
    killed; this process reaps it and prints `dead`."""
    import os

    for _ in sys.stdin:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:  # the hammer: its own store, as a process of its own would open it
            try:
                store = FileStateStore(Path(root))
                current = store.get(key)
                counter = -1 if current is None else current["counter"]
                print(f"ready {os.getpid()}", flush=True)
                while True:
                    counter += 1
                    store.set(key, big_value(counter))
            finally:
                os._exit(1)
        os.waitpid(pid, 0)
        print("dead", flush=True)


def open_store(root: str) -> Any:
    """`ROOT` is a folder (the file store) or `redis:URL#NAMESPACE` (the Redis store)."""
    if not root.startswith("redis:"):
        return FileStateStore(Path(root))
    from agentapps.secrets import Redactor
    from agentapps.stores.link import RedisLink
    from agentapps.stores.redisstate import RedisStateStore

    url, namespace = root.removeprefix("redis:").split("#")
    link = RedisLink(url, namespace, Redactor())
    link.connect()
    return RedisStateStore(link)


def main(argv: list[str]) -> None:
    mode, root, key, *rest = argv
    if mode == "hammers":
        hammers(root, key)
        return
    store = open_store(root)
    if mode == "cas":
        cas(store, key, int(rest[0]), Path(rest[1]))
    elif mode == "hammer":
        hammer(store, key)
    elif mode == "set-after":
        time.sleep(float(rest[0]))
        store.set(key, json.loads(rest[1]))
    elif mode == "hold-lock":
        with FileLock(Path(root) / ".lock"):
            print("locked", flush=True)
            sys.stdin.read()  # hold until the parent closes our stdin
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
