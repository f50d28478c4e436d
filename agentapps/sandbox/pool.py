"""Warm sandbox processes for long-lived hosts (`serve`, `mcp-server`, `worker`, the REPL).

Starting a sandbox process (Python, mini-racer, a V8 isolate) costs tens of milliseconds; a
one-shot `agentapps run` hides that behind its first model call, but a server answering many
short runs pays it at every first snippet. Once `keep_warm()` is called, the process keeps one
spare started, its prelude already evaluated: a new Sandbox takes the spare, and a replacement
starts once the snippet that took it has finished (`replenish`), so the next run finds one ready.
It starts on a thread of its own: starting a process blocked the caller 0.4 to 3 ms, which made a
warm first snippet 1.7 to 4.5 ms instead of 1.7 (instrumented, 2026-11-28). A run
that overlaps a long first snippet of another starts its own process, as the first agent run of
a host does; a host that never runs an agent never starts one.

A spare is used once and only once: before it is taken it has run nothing but the prelude (the
bridge, with the limits the last run asked for: a run that asks for the same takes the spare,
whatever its args, as the run's `memory` seed is set after it is taken; another one gets a new
process, and the spare is replaced by one for it), and a Sandbox never hands its process back.
So every run still gets a fresh isolate in a fresh process, and nothing of one run or client can be
seen by the next. Spares die with the host like any sandbox process (death signal, socket hang-up,
and a finalizer).
"""

from __future__ import annotations

import threading
import time

from agentapps.errors import AgentAppsError
from agentapps.sandbox.process import Child

Key = tuple[int, int, int, str]  # heap bytes, process bytes, largest frame, the prelude posted to it

_lock = threading.Lock()
_warm = False
_spare: tuple[Key, Child] | None = None  # one at most: an idle process costs its memory
_owed: Key | None = None  # the limits of the last spare taken (or missed), until `replenish` replaces it
_starting: threading.Thread | None = None  # the thread starting a replacement, while it runs


def keep_warm(on: bool = True) -> None:
    """Keep a spare sandbox process ready from now on (off: drop the spare, once a replacement
    being started is in place, so that nothing is left behind)."""
    global _warm, _owed
    with _lock:
        _warm = on
        starting = _starting
        if not on:
            _owed = None
    if not on:
        if starting is not None:
            starting.join()  # it sees the host stopped keeping spares: it reaps what it started
        _drop()


def warm() -> bool:
    """Whether this process keeps a spare (a long-lived host): a Sandbox then takes it only when
    its first snippet runs, as the spare is ready at once and a run may never run a snippet."""
    return _warm


def spare(wait: float = 0.0) -> Child | None:
    """The spare waiting now, if any, or the one that comes within `wait` seconds (for tests and
    benchmarks: a replacement starts on a thread)."""
    deadline = time.monotonic() + wait
    while True:
        with _lock:
            found = None if _spare is None else _spare[1]
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.005)


def _drop() -> None:
    global _spare
    with _lock:
        old, _spare = _spare, None
    if old is not None:
        old[1].reap(0.5)  # killed and waited for: no zombie left behind


def _start(key: Key) -> Child:
    heap_bytes, data_bytes, max_frame, prelude = key
    child = Child(heap_bytes, data_bytes, max_frame)
    child.post((("B", prelude),))
    return child


def take(heap_bytes: int, data_bytes: int, max_frame: int, prelude: str) -> Child:
    """A sandbox process that has run nothing but `prelude` (posted to it; its reply not read yet):
    the spare when it was started for the same limits and prelude, else a new one. In a warm host
    the spare for these limits is then owed: `replenish` starts it."""
    global _spare, _owed
    key = (heap_bytes, data_bytes, max_frame, prelude)
    with _lock:
        found = None
        if _spare is not None and _spare[0] == key:
            found, _spare = _spare[1], None
        if _warm:
            _owed = key
    if found is not None and found.proc.poll() is not None:  # it died waiting: never hand it out
        found.reap(0)
        found = None
    return found or _start(key)


def replenish() -> None:
    """Start the spare a take left owed, if any, on a thread of its own (called once the snippet
    that took a process has finished, and when a sandbox closes)."""
    global _owed, _starting
    with _lock:
        key, _owed = _owed, None
        if key is None or not _warm or (_spare is not None and _spare[0] == key) or _starting is not None:
            return
        _starting = threading.Thread(target=_replace, args=(key,), name="agentapps-spare", daemon=True)
        _starting.start()


def _replace(key: Key) -> None:
    """Start a spare for `key`; a spare of other limits or another prelude goes (and this one, if
    the host stopped keeping spares meanwhile). A process started here has no death signal (that
    follows the thread, see child.harden): it still exits when the host's end of its socket closes."""
    global _spare, _starting
    try:
        try:
            child: Child | None = _start(key)
        except AgentAppsError:
            child = None  # no spare this time; the next take tries again
        with _lock:
            gone = child
            if child is not None and _warm:
                old, _spare = _spare, (key, child)
                gone = None if old is None else old[1]
        if gone is not None:
            gone.reap(0.5)  # killed and waited for: no zombie left behind
    finally:
        with _lock:
            _starting = None
