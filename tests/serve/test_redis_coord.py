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
    client.close()


async def _messages(space: str, holds: Callable[[Signal], Answer | None],
                    sent: list[tuple[str, str]]) -> tuple[list[Answer], list[Signal]]:
    """`sent` (stream, kind) passed on by one replica; the other answers with `holds`."""
    seen: list[Signal] = []

    def deliver(signal: Signal) -> Answer | None:
        seen.append(signal)
        return holds(signal)

    holder = redis_coord.RedisCoordinator(REDIS_URL, space)
    sender = redis_coord.RedisCoordinator(REDIS_URL, space)
    await holder.start(deliver)
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
    got, seen = asyncio.run(_messages(space, lambda signal: None, [("gone", "follow-up")]))
    waited = time.monotonic() - started
    assert got == [Answer(503, "No server holding stream 'gone' answered within 0.3 s; the message was not "
                               "taken.")]
    assert len(seen) == 1 and 0.3 <= waited < 3
