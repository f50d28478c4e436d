"""The Redis coordinator's message round trip, in process against the real server: the replica that
holds a stream answers a message another replica passed on, and a message no replica holds is 503
once the wait is over. (Two real `serve` processes: tests/serve/test_replicas.py.)"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentapps.serve import redis_coord
from agentapps.serve.coord import TAKEN, Answer, Signal
from tests.serve.conftest import REDIS_URL, redis_or_skip


@pytest.fixture
def space() -> Any:
    client = redis_or_skip()
    name = f"coordtest-{secrets.token_hex(4)}"
    yield name
    assert not list(client.scan_iter(f"agentapps:serve:{name}:reply:*"))  # every answer was taken
    claims = list(client.scan_iter(f"agentapps:serve:{name}:claim:*"))  # (they expire in 30 s)
    if claims:
        client.delete(*claims)
    client.close()


async def _messages(space: str, holds: Callable[[Signal], Answer | None],
                    sent: list[tuple[str, str]], held: bool = True) -> tuple[list[Answer], list[Signal]]:
    """`sent` (stream, kind) passed on by one replica; the other answers with `holds` (when `held`:
    it says it holds the streams)."""
    seen: list[Signal] = []

    def deliver(signal: Signal) -> Answer | None:
        seen.append(signal)
        return holds(signal)

    holder = redis_coord.RedisCoordinator(REDIS_URL, space)
    sender = redis_coord.RedisCoordinator(REDIS_URL, space)
    await holder.start(deliver, lambda stream: held)
    await sender.start(lambda signal: None)  # it holds none of them
    try:
        return [await sender.message(stream, kind, f"to {stream}") for stream, kind in sent], seen
    finally:
        await sender.close()
        await holder.close()


def test_the_holders_answer_comes_back_to_the_replica_that_passed_the_message_on(space):
    answers = {"agent": TAKEN, "code": Answer(409, "Stream 'code' cannot take the message: it runs no agent."),
               "full": Answer(429, "16 follow-up messages already wait for the agent of stream 'full'.")}
    sent = [("agent", "steer"), ("code", "steer"), ("full", "follow-up")]
    got, seen = asyncio.run(_messages(space, lambda signal: answers[signal["stream"]], sent))
    assert got == [answers["agent"], answers["code"], answers["full"]]
    assert [(s["stream"], s["kind"], s["text"]) for s in seen] == [(n, k, f"to {n}") for n, k in sent]


def test_a_message_no_replica_holds_is_503_once_the_wait_is_over(space, monkeypatch):
    monkeypatch.setattr(redis_coord, "REPLY_WAIT", 0.3)
    started = time.monotonic()
    got, seen = asyncio.run(_messages(space, lambda signal: None, [("gone", "follow-up")], held=False))
    waited = time.monotonic() - started
    assert got == [Answer(503, "No server holding stream 'gone' answered within 0.3 s; the message was not "
                               "taken.")]
    assert seen == [] and 0.3 <= waited < 3


def test_a_message_whose_sender_gave_up_is_never_taken_when_it_arrives_late(space, monkeypatch):
    monkeypatch.setattr(redis_coord, "REPLY_WAIT", 0.3)
    token = f"late-{secrets.token_hex(6)}"
    monkeypatch.setattr(redis_coord.secrets, "token_hex", lambda n: token)

    async def main() -> list[Signal]:
        sender = redis_coord.RedisCoordinator(REDIS_URL, space)
        await sender.start(lambda signal: None)
        late = redis_coord.RedisCoordinator(REDIS_URL, space)  # the holder whose loop was stuck
        taken: list[Signal] = []
        held = [False]
        await late.start(lambda signal: taken.append(signal) or TAKEN, lambda stream: held[0])
        try:
            told = await sender.message("stuck", "steer", "now")
            assert told.status == 503 and "was not taken" in told.why
            held[0] = True  # the same relayed message, only now reaching its holder
            await sender._signal({"kind": "steer", "stream": "stuck", "text": "now", "reply": token})
            await asyncio.sleep(0.3)
            return taken
        finally:
            await late.close()
            await sender.close()

    assert asyncio.run(main()) == []


def test_nothing_published_on_the_channel_stops_the_listening(space):
    import redis

    async def main() -> Answer:
        holder = redis_coord.RedisCoordinator(REDIS_URL, space)
        sender = redis_coord.RedisCoordinator(REDIS_URL, space)
        await holder.start(lambda signal: TAKEN, lambda stream: True)
        await sender.start(lambda signal: None)
        raw = redis.Redis.from_url(REDIS_URL)
        try:
            for junk in (b"\xff\xfe", b"[" * 100_000, b"{}", b"[]", b'{"reply": "x", "stream": []}'):
                raw.publish(f"agentapps:serve:{space}:signals", junk)
            return await sender.message("s", "steer", "still listening?")
        finally:
            raw.close()
            await sender.close()
            await holder.close()

    assert asyncio.run(main()) == TAKEN
