"""Warm sandbox processes for long-lived hosts (`serve`, `mcp-server`, `worker`, the REPL).

Starting a sandbox process (Python, mini-racer, a V8 isolate) costs tens of milliseconds; a
one-shot `agentapps run` hides that behind its first model call, but a server answering many
short runs pays it at every first snippet. Once `keep_warm()` is called, the process keeps one
spare started, its prelude already evaluated: a new Sandbox takes the spare and a replacement starts
at once, so the next run finds one ready. (The first agent run of a host starts
its own; a host that never runs an agent never starts one.)

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

from agentapps.errors import AgentAppsError
from agentapps.sandbox.process import Child

Key = tuple[int, int, int, str]  # heap bytes, process bytes, largest frame, the prelude posted to it

_lock = threading.Lock()
_warm = False
_spare: tuple[Key, Child] | None = None  # one at most: an idle process costs its memory


def keep_warm(on: bool = True) -> None:
    """Keep a spare sandbox process ready from now on (off: drop the spare)."""
    global _warm
    with _lock:
        _warm = on
    if not on:
        _swap(None)


def warm() -> bool:
    """Whether this process keeps a spare (a long-lived host): a Sandbox then takes it only when
    its first snippet runs, as the spare is ready at once and a run may never run a snippet."""
    return _warm


def spare() -> Child | None:
    """The spare waiting now, if any (for tests and benchmarks)."""
    with _lock:
        return None if _spare is None else _spare[1]


def _swap(new: tuple[Key, Child] | None) -> None:
    global _spare
    with _lock:
        old, _spare = _spare, new
    if old is not None:
        old[1].reap(0.5)  # killed and waited for: no zombie left behind


def _start(key: Key) -> Child:
    heap_bytes, data_bytes, max_frame, prelude = key
    child = Child(heap_bytes, data_bytes, max_frame)
    child.post((("B", prelude),))
    return child


def take(heap_bytes: int, data_bytes: int, max_frame: int, prelude: str) -> Child:
    """A sandbox process that has run nothing but `prelude` (posted to it; its reply not read yet):
    the spare when it was started for the same limits and prelude (a replacement starts at once),
    else a new one."""
    global _spare
    key = (heap_bytes, data_bytes, max_frame, prelude)
    with _lock:
        found, warm = None, _warm
        if _spare is not None and _spare[0] == key:
            found, _spare = _spare[1], None
    if found is not None and found.proc.poll() is not None:  # it died waiting: never hand it out
        found.reap(0)
        found = None
    child = found or _start(key)
    if warm:
        try:
            _swap((key, _start(key)))  # a spare of other limits or another prelude goes
        except AgentAppsError:
            pass  # no spare this time; the next take tries again
    return child
