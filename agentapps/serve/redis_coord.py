"""`Coordinator` on Redis: what `agentapps serve` replicas share, with redis-py (asyncio).

Keys live under `agentapps:serve:{namespace}:` (the project's name, as for the other stores):
`stream:{id}` (owner, with a time-to-live), `pending:{id}` (the set of approvals waiting),
`thread:{id}` (JSON) and `threads:{owner}` (a sorted set by last use), `claim:{key}` (SET NX EX).
Decisions, cancellations and messages for a running agent go out on one channel, `signals`, that
every replica listens to; the one holding the stream acts on them. A message carries a reply token.
Whoever first sets `claim:{token}` (SET NX) decides its fate: the holder, which then takes or refuses
the message and pushes its answer to `reply:{token}` (the sender waits there, BLPOP); or the sender,
once REPLY_WAIT seconds passed without an answer, and then the message is never taken (503). So a
503 always means "not taken". At most MAX_RELAYED messages wait for answers at once per replica,
each holding a connection. This module is the only one here that imports redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from agentapps.errors import UsageError
from agentapps.serve.coord import Answer, Deliver, Thread

log = logging.getLogger("agentapps.serve")
RETRY_SECONDS = 1.0
REPLY_WAIT = 2.0  # seconds a replica waits for the holder's answer to a message it passed on
REPLY_TTL = 30  # seconds an answer nobody took (its sender gave up) stays on the server
MAX_RELAYED = 32  # messages one replica relays and waits on at once (each holds a pooled connection)


def where(url: str) -> str:
    """host:port of a Redis URL, never its password."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"


def namespace(g: Any) -> str:
    """The project's key namespace, exactly as the stores name it (stores.config)."""
    from agentapps.stores.config import stores_config

    found = stores_config(g).namespace
    return found if found is not None else str((g.config.project or g.config.cwd).name)


class RedisCoordinator:
    def __init__(self, url: str, space: str) -> None:
        self.url, self.prefix = url, f"agentapps:serve:{space}:"
        self.redis: Any = aioredis.from_url(url, decode_responses=True)
        self.channel: Any = aioredis.from_url(url)  # signals as bytes: one that is not UTF-8 is dropped alone
        self.listener: asyncio.Task[None] | None = None
        self.relaying = asyncio.Semaphore(MAX_RELAYED)

    def check(self) -> None:
        """Before serving: an unreachable Redis is one line and exit 2 (host and port, never a password)."""
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=5)
        try:
            client.ping()
        except (RedisError, OSError) as exc:
            raise UsageError(f"Redis at {where(self.url)} is not reachable: {type(exc).__name__}.") from None
        finally:
            client.close()

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    async def start(self, deliver: Deliver, holds: Callable[[str], bool] = lambda stream: False) -> None:
        """`holds(stream)`: whether this process holds the stream (it answers relayed messages)."""
        ready = asyncio.Event()
        self.listener = asyncio.ensure_future(self._listen(deliver, holds, ready))
        await asyncio.wait_for(ready.wait(), 10)

    async def _listen(self, deliver: Deliver, holds: Callable[[str], bool], ready: asyncio.Event) -> None:
        """Every signal on the channel to `deliver`; reconnects after a failure. Nothing a signal
        holds (whoever could publish it) ends the listening."""
        while True:
            pubsub = self.channel.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.key("signals"))
                ready.set()
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        await self._one(message["data"], deliver, holds)
            except (RedisError, OSError):
                log.warning("lost the Redis channel at %s; reconnecting", where(self.url))
                await asyncio.sleep(RETRY_SECONDS)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    async def close(self) -> None:
        if self.listener is not None:
            self.listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.listener
        await self.redis.aclose()
        await self.channel.aclose()

    async def _one(self, data: Any, deliver: Deliver, holds: Callable[[str], bool]) -> None:
        try:
            signal = json.loads(data)
            if not isinstance(signal, dict):
                return
            token = signal.get("reply")
            if not isinstance(token, str):
                deliver(signal)
                return
            stream = signal.get("stream")
            if not isinstance(stream, str) or not holds(stream):
                return
            if not await self.redis.set(self.key("claim", token), "holder", nx=True, ex=REPLY_TTL):
                return  # its sender gave up waiting and told its client so: never taken
            answer = deliver(signal) or Answer(404, f"No open stream '{stream}'.")
            await self._answer(token, answer)
        except (ValueError, TypeError, AttributeError, RecursionError):
            log.warning("dropped a malformed signal on the Redis channel at %s", where(self.url))
        except RedisError as exc:  # the answer is lost, not the channel: its sender says it may be taken
            log.warning("could not answer a relayed message at %s: %s", where(self.url), type(exc).__name__)

    async def _signal(self, signal: dict[str, str]) -> None:
        await self.redis.publish(self.key("signals"), json.dumps(signal))

    async def open_stream(self, stream: str, owner: str, ttl: float) -> None:
        await self.redis.set(self.key("stream", stream), owner, ex=max(int(ttl), 1))

    async def close_stream(self, stream: str) -> None:
        await self.redis.delete(self.key("stream", stream), self.key("pending", stream))

    async def stream_owner(self, stream: str) -> str | None:
        found = await self.redis.get(self.key("stream", stream))
        return str(found) if found is not None else None

    async def add_pending(self, stream: str, approval: str) -> None:
        key = self.key("pending", stream)
        async with self.redis.pipeline(transaction=True) as pipe:
            await pipe.sadd(key, approval).expire(key, 86400).execute()

    async def drop_pending(self, stream: str, approval: str) -> None:
        await self.redis.srem(self.key("pending", stream), approval)

    async def decide(self, stream: str, approval: str, decision: str) -> bool:
        if not await self.redis.srem(self.key("pending", stream), approval):  # the first decision wins
            return False
        await self._signal({"kind": "decision", "stream": stream, "approval": approval, "decision": decision})
        return True

    async def cancel(self, stream: str) -> None:
        await self._signal({"kind": "cancel", "stream": stream})

    async def message(self, stream: str, kind: str, text: str) -> Answer:
        if self.relaying.locked():
            return Answer(503, f"{MAX_RELAYED} messages already wait for other replicas' answers here; the "
                               f"message for stream '{stream}' was not sent. Try again shortly.")
        async with self.relaying:
            token = secrets.token_hex(12)
            await self._signal({"kind": kind, "stream": stream, "text": text, "reply": token})
            found = await self.redis.blpop([self.key("reply", token)], timeout=REPLY_WAIT)
            if found is None:
                if await self.redis.set(self.key("claim", token), "sender", nx=True, ex=REPLY_TTL):
                    # the holder is gone (its stream record outlives it until its time-to-live) or stuck;
                    # having claimed the message, it can never take it now
                    return Answer(503, f"No server holding stream '{stream}' answered within {REPLY_WAIT:g} s; "
                                       "the message was not taken.")
                found = await self.redis.blpop([self.key("reply", token)], timeout=REPLY_WAIT)  # it is deciding
                if found is None:
                    return Answer(503, f"The server holding stream '{stream}' took up the message but its "
                                       "answer did not come back; it may have been taken.")
        said = json.loads(found[1])
        return Answer(int(said["status"]), str(said.get("why", "")))

    async def _answer(self, token: str, answer: Answer) -> None:
        key = self.key("reply", token)
        async with self.redis.pipeline(transaction=True) as pipe:
            await pipe.rpush(key, json.dumps({"status": answer.status, "why": answer.why})).expire(
                key, REPLY_TTL).execute()

    async def save_thread(self, thread: Thread) -> None:
        owner = str(thread.get("owner"))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.key("thread", thread["id"]), json.dumps(thread))
            pipe.zadd(self.key("threads", owner), {thread["id"]: float(thread.get("updated") or time.time())})
            await pipe.execute()

    async def thread(self, thread_id: str) -> Thread | None:
        found = await self.redis.get(self.key("thread", thread_id))
        return json.loads(found) if found else None

    async def threads(self, owner: str) -> list[Thread]:
        ids = await self.redis.zrevrange(self.key("threads", owner), 0, 999)
        if not ids:
            return []
        found = await self.redis.mget([self.key("thread", i) for i in ids])
        return [json.loads(text) for text in found if text]

    async def drop_thread(self, thread_id: str) -> bool:
        found = await self.thread(thread_id)
        if found is None:
            return False
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.key("thread", thread_id))
            pipe.zrem(self.key("threads", str(found.get("owner"))), thread_id)
            await pipe.execute()
        return True

    async def claim(self, key: str, ttl: float) -> bool:
        return bool(await self.redis.set(self.key("claim", key), "1", nx=True, ex=max(int(ttl), 1)))
