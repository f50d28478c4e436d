"""Callback refs: in-memory skills named `{label}-{8 hex}`, served by a function or by a reply queue
(in this process, or on Redis so that other processes can invoke them: callbacks/remote.py)."""

from __future__ import annotations

import asyncio
import inspect
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.callbacks.slots import CALLBACKS
from agentapps.errors import LimitError, SkillError, UsageError
from agentapps.tools.names import is_valid_name
from agentapps.types import ToolDef, ToolFn

if TYPE_CHECKING:
    from agentapps.context.context import Context, Globals

SCHEME = "callback://"
MAX_LABEL = 64 - 9  # room for "-" and 8 hex digits


@dataclass
class _Call:
    """One call of a remote callback waiting for its answer."""

    id: str
    args: dict[str, Any]
    answer: asyncio.Future[Any]


@dataclass
class Endpoint:
    """A callback without a function: invocations queue up until callback-respond answers them."""

    name: str
    timeout: float | None
    ready: deque[_Call] = field(default_factory=deque)  # not yet handed to callback-wait
    waiters: deque[asyncio.Future[_Call]] = field(default_factory=deque)
    pending: dict[str, _Call] = field(default_factory=dict)  # every unanswered call, by id

    async def serve(self, ctx: Context, args: dict[str, Any]) -> Any:
        """What invoking the ref does: queue `{id, args}` and wait for the answer."""
        call = _Call(secrets.token_hex(4), dict(args), asyncio.get_running_loop().create_future())
        self.pending[call.id] = call
        if not _hand_over(self.waiters, call):
            self.ready.append(call)
        try:
            await asyncio.wait({call.answer}, timeout=self.timeout)
            if not call.answer.done():
                raise LimitError(
                    f"Callback '{self.name}' got no response within {self.timeout:g} s; answer it with "
                    "callback-respond, or create it with a longer timeout.", skill=self.name)
            return call.answer.result()
        finally:
            self.pending.pop(call.id, None)
            if call in self.ready:
                self.ready.remove(call)
            if not call.answer.done():
                call.answer.cancel()

    async def next_call(self, timeout: float | None) -> dict[str, Any]:
        """The oldest invocation nobody has taken yet, waiting up to `timeout` seconds for one."""
        if self.ready:
            call = self.ready.popleft()
            return {"id": call.id, "args": call.args}
        waiter: asyncio.Future[_Call] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await asyncio.wait({waiter}, timeout=timeout)
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.ready.appendleft(waiter.result())  # taken just as we were cancelled: give it back
            raise
        finally:
            if waiter in self.waiters:
                self.waiters.remove(waiter)
            if not waiter.done():
                waiter.cancel()
        if waiter.cancelled():
            raise LimitError(f"No invocation of callback '{self.name}' arrived within {timeout:g} s.",
                             skill=self.name)
        call = waiter.result()
        return {"id": call.id, "args": call.args}

    def respond(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        call = self.pending.pop(call_id, None)
        if call is None:
            raise UsageError(f"Callback '{self.name}' has no pending invocation '{call_id}': it was "
                             "answered already, timed out, or never existed.", skill=self.name)
        if call in self.ready:
            self.ready.remove(call)
        if error is not None:
            call.answer.set_exception(SkillError(error, skill=self.name))
        else:
            call.answer.set_result(result)

    def close(self) -> None:
        """Fail every unanswered invocation and every waiting callback-wait."""
        for call in list(self.pending.values()):
            if not call.answer.done():
                call.answer.set_exception(SkillError(
                    f"Callback '{self.name}' was released before it answered.", skill=self.name))
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(SkillError(
                    f"Callback '{self.name}' was released while waiting for an invocation.",
                    skill=self.name))
        self.pending.clear()
        self.ready.clear()


def _hand_over(waiters: deque[asyncio.Future[_Call]], call: _Call) -> bool:
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(call)
            return True
    return False


def _endpoints(g: Globals) -> dict[str, Any]:
    """Reply queues by name: `Endpoint`s, or `RemoteEndpoint`s for callbacks on Redis."""
    return g.internals.get(CALLBACKS)


def callback_name(ref: str) -> str:
    """A callback's name from its ref (`name` or `callback://name`)."""
    return ref.removeprefix(SCHEME)


def _with_timeout(fn: ToolFn, name: str, timeout: float) -> ToolFn:
    async def timed(ctx: Context, args: dict[str, Any]) -> Any:
        value = fn(ctx, args)
        if not inspect.isawaitable(value):
            return value
        try:
            return await asyncio.wait_for(value, timeout)
        except TimeoutError:
            raise LimitError(f"Callback '{name}' did not finish within {timeout:g} s.", skill=name) from None

    return timed


def create_callback_ref(g: Globals, fn: ToolFn | None = None, *, label: str = "callback",
                        timeout: float | None = None, store: str | None = None) -> str:
    """Register an in-memory skill `{label}-{8 hex}` and return its name (the ref to invoke).

    With `fn`, invoking the ref calls `fn(ctx, args)` (in this process only). Without, invocations
    queue for `endpoint(g, ref).next_call()` / `.respond()` (the callback-wait and callback-respond
    skills); with `store` 'redis' (or the project's `stores: {callbacks: redis}`) that queue is on
    the Redis server, so any process of the project can invoke the ref by name. `timeout`
    (seconds) bounds how long an invoker waits for its answer.
    """
    if not is_valid_name(label) or len(label) > MAX_LABEL:
        raise UsageError(f"Callback label {label[:80]!r} must be 1-{MAX_LABEL} characters of a-z, "
                         "0-9 and '-', starting with a letter or digit.")
    name = f"{label}-{secrets.token_hex(4)}"
    while name in g.lookup.memory:
        name = f"{label}-{secrets.token_hex(4)}"
    if fn is None and _on_redis(g, store):
        from agentapps.callbacks.remote import RemoteEndpoint, tool_for
        from agentapps.stores.config import link_for

        link = link_for(g)
        remote = RemoteEndpoint(link, name, timeout)
        _heartbeat(g, link).add(name, timeout)
        _endpoints(g)[name] = remote
        g.lookup.register(tool_for(name, remote.serve))
        return name
    if fn is None:
        endpoint = Endpoint(name, timeout)
        _endpoints(g)[name] = endpoint
        fn = endpoint.serve
    elif timeout is not None:
        fn = _with_timeout(fn, name, timeout)
    # one params schema for every callback of the process: the schema cache keeps compiled schemas
    # by identity, and a fresh one per ref (two per agent run) would crowd out the skills' own
    params = g.cache_for("callbacks").setdefault("params", {"type": "object"})
    frontmatter = {
        "name": name,
        "description": f"Callback ref '{name}': its caller waits for the answer.",
        "metadata": {"params": params, "tags": ["callback"]},
    }
    g.lookup.register(ToolDef(name, "memory", frontmatter, fn=fn, uri=f"{SCHEME}{name}"))
    return name


def _on_redis(g: Globals, store: str | None) -> bool:
    from agentapps.stores.config import backend

    return backend(g, "callbacks", store) == "redis"


def _heartbeat(g: Globals, link: Any) -> Any:
    """The process's renewer of Redis callback registrations (one per link); when the link closes
    (the run ends) every callback it still owns is released, so invokers fail at once."""
    heart = link.services.get("heartbeat")
    if heart is None:
        from agentapps.callbacks.remote import Heartbeat

        heart = link.services["heartbeat"] = Heartbeat(link)

        def release_all() -> None:
            for name in [n for n, e in _endpoints(g).items() if getattr(e, "link", None) is link]:
                release_callback_ref(g, name)

        link.on_close.append(release_all)
    return heart


def endpoint(g: Globals, ref: str) -> Any:
    """The reply queue of a callback made without a function; a clear error for anything else."""
    name = callback_name(ref)
    found = _endpoints(g).get(name)
    if found is None:
        why = ("it is served by a function, not by callback-wait/respond" if name in g.lookup.memory
               else "it was released, or never created")
        raise UsageError(f"No callback named '{name}' to wait on or answer: {why}.", skill=name)
    return found


def release_callback_ref(g: Globals, ref: str) -> bool:
    """Unregister a callback and fail its pending invocations; False if there was none."""
    name = callback_name(ref)
    tool = g.lookup.memory.get(name)
    if tool is None or tool.uri != f"{SCHEME}{name}":
        return False
    g.lookup.unregister(name)
    found = _endpoints(g).pop(name, None)
    if found is not None:
        found.close()
        if hasattr(found, "link"):
            _heartbeat(g, found.link).remove(name)
    return True
