"""Callback refs across processes (`callback-create {store: redis}`, or `stores: {callbacks: redis}`).

The owner registers `agentapps:{ns}:callback:{name}` with a short time-to-live that a thread of its
process keeps renewing, so the registration vanishes within `ALIVE` seconds of the owner's death.
An invocation (from any process of the project, the owner's included) is queued on the list
`...:{name}:calls` and waits on its own reply list; it checks the registration between waits, so a
call to a ref whose owner died or released it fails with a clear error instead of hanging. Other
processes find the ref by name through `RemoteCallbacks`, a lookup provider asked after a miss.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agentapps.errors import AgentAppsError, LimitError, SkillError, UsageError
from agentapps.types import ToolDef

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals
    from agentapps.stores.link import RedisLink
    from agentapps.tools.lookup import Lookup

ALIVE: Final = 3.0  # seconds a registration outlives its owner's last renewal
KNOWN: Final = 86_400  # seconds a ref's name is remembered, so a call after its owner left says so
BEAT: Final = 1.0  # seconds between renewals
REPLY_KEPT_MS: Final = 60_000
SCHEME: Final = "callback://"
_NAME: Final = re.compile(r"[a-z0-9][a-z0-9-]*-[0-9a-f]{8}")


def _keys(link: RedisLink, name: str) -> tuple[str, str]:
    return link.key("callback", name), link.key("callback", name, "calls")


def _known(link: RedisLink, name: str) -> str:
    return link.key("callback-known", name)


def tool_for(name: str, fn: Any) -> ToolDef:
    frontmatter = {"name": name, "description": f"Callback ref '{name}': its caller waits for the answer.",
                   "metadata": {"params": {"type": "object"}, "tags": ["callback"]}}
    return ToolDef(name, "memory", frontmatter, fn=fn, uri=f"{SCHEME}{name}")


def _gone(name: str) -> SkillError:
    return SkillError(f"Callback '{name}' has no owner any more: the process that created it released it, "
                      "exited or crashed, so nobody can answer. Create a new callback.", skill=name)


async def invoke_remote(link: RedisLink, name: str, args: dict[str, Any]) -> Any:
    """Queue a call to callback `name` and wait for its answer (or for its owner to disappear)."""
    registration, calls = _keys(link, name)
    found = link.call(link.client.get, registration)
    if found is None:
        raise _gone(name)
    timeout = json.loads(found).get("timeout")
    call_id = secrets.token_hex(4)
    reply = f"{calls}:reply:{call_id}"
    queued = json.dumps({"id": call_id, "args": args, "reply": reply})
    link.call(link.client.rpush, calls, queued)
    deadline = None if timeout is None else time.monotonic() + timeout

    def answer(seconds: float) -> Any:
        got = link.call(link.client.blpop, [reply], timeout=max(seconds, 0.01))  # 0 would block for good
        if got is None and not link.call(link.client.exists, registration):
            return {"gone": True}
        return None if got is None else json.loads(got[1])

    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            link.call(link.client.lrem, calls, 1, queued)  # not taken yet: nobody will take it now
            raise LimitError(f"Callback '{name}' got no response within {timeout:g} s; answer it with "
                             "callback-respond, or create it with a longer timeout.", skill=name)
        got = await link.slices(answer, None if left is None else min(left, BEAT))
        if got is None:
            continue
        if got.get("gone"):
            raise _gone(name)
        if "error" in got:
            raise SkillError(str(got["error"]), skill=name)
        return got.get("result")


@dataclass
class RemoteEndpoint:
    """The owner's side of a Redis callback: what callback-wait, -respond and -release use."""

    link: RedisLink
    name: str
    timeout: float | None
    pending: dict[str, str] = field(default_factory=dict)  # taken, unanswered call id -> reply key

    async def serve(self, ctx: Context, args: dict[str, Any]) -> Any:
        return await invoke_remote(self.link, self.name, args)

    async def next_call(self, timeout: float | None) -> dict[str, Any]:
        _, calls = _keys(self.link, self.name)

        def take(seconds: float) -> Any:
            got = self.link.call(self.link.client.blpop, [calls], timeout=max(seconds, 0.01))
            return None if got is None else json.loads(got[1])

        queued: Any = self.link.call(self.link.client.lpop, calls)
        call: Any = json.loads(queued) if queued is not None else await self.link.slices(
            take, timeout, orphan=self._put_back)
        if call is None:
            raise LimitError(f"No invocation of callback '{self.name}' arrived within {timeout:g} s.",
                             skill=self.name)
        self.pending[call["id"]] = call["reply"]
        return {"id": call["id"], "args": call["args"]}

    def _put_back(self, call: Any) -> None:
        self.link.call(self.link.client.lpush, _keys(self.link, self.name)[1], json.dumps(call))

    def respond(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        reply = self.pending.pop(call_id, None)
        if reply is None:
            raise UsageError(f"Callback '{self.name}' has no pending invocation '{call_id}': it was "
                             "answered already, or never taken with callback-wait.", skill=self.name)
        body = {"error": error} if error is not None else {"result": result}
        with self.link.client.pipeline(transaction=True) as pipe:
            pipe.rpush(reply, json.dumps(body))
            pipe.pexpire(reply, REPLY_KEPT_MS)
            self.link.call(pipe.execute)

    def close(self) -> None:
        """Unregister, and fail every call taken or still queued."""
        registration, calls = _keys(self.link, self.name)
        self.link.call(self.link.client.delete, registration)
        queued = self.link.call(self.link.client.lrange, calls, 0, -1)
        self.link.call(self.link.client.delete, calls)
        replies = list(self.pending.values()) + [json.loads(c)["reply"] for c in queued]
        self.pending.clear()
        failure = json.dumps({"error": f"Callback '{self.name}' was released before it answered."})
        for reply in replies:
            self.link.call(self.link.client.rpush, reply, failure)
            self.link.call(self.link.client.pexpire, reply, REPLY_KEPT_MS)


class Heartbeat:
    """One thread per process renewing the registrations it owns until they are released."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link
        self.owned: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, name: str, timeout: float | None) -> None:
        registration, _ = _keys(self.link, name)
        body = json.dumps({"timeout": timeout, "owner": self.link.namespace})
        self.link.call(self.link.client.set, registration, body, px=round(ALIVE * 1000))
        self.link.call(self.link.client.set, _known(self.link, name), "1", ex=KNOWN)
        with self._lock:
            self.owned.add(registration)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentapps-callbacks", daemon=True)
                self._thread.start()

    def remove(self, name: str) -> None:
        with self._lock:
            self.owned.discard(_keys(self.link, name)[0])

    def _run(self) -> None:
        while not self.link.stopping.wait(BEAT):
            with self._lock:
                owned = list(self.owned)
            for registration in owned:
                try:
                    if not self.link.client.pexpire(registration, round(ALIVE * 1000)):
                        with self._lock:
                            self.owned.discard(registration)  # released meanwhile
                except Exception:  # noqa: BLE001, S112 - the server is away: try again next beat
                    continue


class RemoteCallbacks:
    """Lookup provider: after a miss, a name like `label-1a2b3c4d` registered on the server by
    another process of the project becomes an in-memory skill that invokes it (one whose owner has
    gone still does, so that invoking it says so)."""

    def __init__(self, g: Globals) -> None:
        self.g = g

    def provide(self, lookup: Lookup, name: str | None, fresh: bool, /) -> None:
        if not fresh or name is None:
            return
        bare = name.removeprefix(SCHEME)
        if not _NAME.fullmatch(bare):
            return
        from agentapps.stores.config import link_for

        try:
            link = link_for(self.g)
            if not link.call(link.client.exists, _known(link, bare)):
                return
        except AgentAppsError:
            return  # no server, no project name: the ref is simply unknown here
        g = self.g

        async def proxy(ctx: Context, args: dict[str, Any]) -> Any:
            return await invoke_remote(link_for(g), bare, args)

        lookup.register(tool_for(bare, proxy))

    def problems(self) -> list[str]:
        return []
