"""What replicas of `agentapps serve` must agree on, behind one small interface: which streams are
open and who owns them, their pending approvals and the decisions on them, cancellations, threads,
and once-only claims (a scheduled run, a webhook delivery). `Local` keeps it in this process;
`redis_coord.RedisCoordinator` shares it between processes through Redis.

Decisions, cancellations and messages to a running agent (steering, follow-ups) are *delivered*:
the coordinator calls the `Deliver` function of the process that holds the stream (with Redis,
whichever process that is), which resumes, stops or tells it. For a message, the holder's answer
(taken, or why not) comes back to the replica the client asked, so every replica answers alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

Signal = dict[str, str]  # {"kind": "decision"|"cancel"|"steer"|"follow-up", "stream", "approval"?,
#                           "decision"?, "text"?}


@dataclass(frozen=True)
class Answer:
    """What the holder of a stream did with a message: 202 taken; 409 it can never be taken (`why`
    says so); 429 too many wait; 404 the stream has ended; 503 no replica answered in time."""

    status: int
    why: str = ""


TAKEN = Answer(202)
# called by the coordinator in the process that may hold the signal's stream; None: not held here
Deliver = Callable[[Signal], Answer | None]
Thread = dict[str, Any]  # {id, owner, skill, created, updated, runs, status}
MAX_CLAIMS = 100_000  # remembered once-only keys (a bound, not a promise: they also expire)


class Coordinator(Protocol):
    async def start(self, deliver: Deliver, holds: Callable[[str], bool] = ...) -> None:
        """Listen for signals; `holds(stream)` says whether this process holds a stream."""
    async def close(self) -> None: ...
    async def open_stream(self, stream: str, owner: str, ttl: float) -> None: ...
    async def close_stream(self, stream: str) -> None: ...
    async def stream_owner(self, stream: str) -> str | None: ...
    async def add_pending(self, stream: str, approval: str) -> None: ...
    async def drop_pending(self, stream: str, approval: str) -> None: ...
    async def decide(self, stream: str, approval: str, decision: str) -> bool:
        """Deliver `decision` if the approval is still pending (the first decision wins)."""
    async def cancel(self, stream: str) -> None: ...
    async def message(self, stream: str, kind: str, text: str) -> Answer:
        """Deliver a message for the stream's agent (`kind` is "steer" or "follow-up") held by
        another process, and return what its holder did with it."""
    async def save_thread(self, thread: Thread) -> None: ...
    async def thread(self, thread_id: str) -> Thread | None: ...
    async def threads(self, owner: str) -> list[Thread]: ...
    async def drop_thread(self, thread_id: str) -> bool: ...
    async def claim(self, key: str, ttl: float) -> bool:
        """True for the first caller of `key` within `ttl` seconds, across every replica."""


class Local:
    """One process: everything in dicts."""

    def __init__(self) -> None:
        self.deliver: Deliver = lambda signal: None
        self.owners: dict[str, str] = {}
        self.pending: dict[str, set[str]] = {}
        self.saved: dict[str, Thread] = {}
        self.claims: dict[str, float] = {}

    async def start(self, deliver: Deliver, holds: Callable[[str], bool] = lambda stream: False) -> None:
        self.deliver = deliver

    async def close(self) -> None:
        return None

    async def open_stream(self, stream: str, owner: str, ttl: float) -> None:
        self.owners[stream] = owner
        self.pending[stream] = set()

    async def close_stream(self, stream: str) -> None:
        self.owners.pop(stream, None)
        self.pending.pop(stream, None)

    async def stream_owner(self, stream: str) -> str | None:
        return self.owners.get(stream)

    async def add_pending(self, stream: str, approval: str) -> None:
        self.pending.setdefault(stream, set()).add(approval)

    async def drop_pending(self, stream: str, approval: str) -> None:
        self.pending.get(stream, set()).discard(approval)

    async def decide(self, stream: str, approval: str, decision: str) -> bool:
        waiting = self.pending.get(stream, set())
        if approval not in waiting:
            return False
        waiting.discard(approval)
        self.deliver({"kind": "decision", "stream": stream, "approval": approval, "decision": decision})
        return True

    async def cancel(self, stream: str) -> None:
        self.deliver({"kind": "cancel", "stream": stream})

    async def message(self, stream: str, kind: str, text: str) -> Answer:
        found = self.deliver({"kind": kind, "stream": stream, "text": text})
        return found if found is not None else Answer(404, f"No open stream '{stream}'.")

    async def save_thread(self, thread: Thread) -> None:
        self.saved[thread["id"]] = dict(thread)

    async def thread(self, thread_id: str) -> Thread | None:
        found = self.saved.get(thread_id)
        return dict(found) if found is not None else None

    async def threads(self, owner: str) -> list[Thread]:
        mine = [dict(t) for t in self.saved.values() if t.get("owner") == owner]
        return sorted(mine, key=lambda t: -float(t.get("updated") or 0))

    async def drop_thread(self, thread_id: str) -> bool:
        return self.saved.pop(thread_id, None) is not None

    async def claim(self, key: str, ttl: float) -> bool:
        now = time.time()
        if len(self.claims) >= MAX_CLAIMS:
            self.claims = {k: t for k, t in self.claims.items() if t > now}
        if self.claims.get(key, 0.0) > now:
            return False
        self.claims[key] = now + ttl
        return True
