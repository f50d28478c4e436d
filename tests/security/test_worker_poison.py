"""Worker poison entries the earlier rounds did not try (issue 22's attack suite): stream entries that
are not events, written by anyone who can write the stream. Each is set aside as a dead letter without
reaching the handler, the events around it are handled, nothing stays pending, and the dead letters
can still be listed. The rest of the class lives in tests/runtime/ (test_worker.py,
test_event_backends.py). A real `agentapps worker` against the shared Redis server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.redis_server import RedisProject, redis_project, redis_url  # noqa: F401 - fixtures

POISON = pytest.mark.attack("worker poison entries")
RECORD = '''
import json, os

frontmatter = {"name": "record", "metadata": {"params": {"type": "object", "properties": {
    "event": {"type": "object"}}, "required": ["event"], "additionalProperties": False}}}


def run(ctx, args):
    with open(os.path.join(str(ctx.globals.config.project), "handled.txt"), "a") as out:
        out.write(json.dumps(args["event"]["data"]) + "\\n")
'''
SHAPES: dict[str, dict[bytes, bytes]] = {
    "body-not-utf8": {b"e": b'\xff\xfe{"data": 1}'},
    "binary-field-name-no-body": {b"\xff\x00": b"x"},
    "empty-body": {b"e": b""},
    "dead-letter-note-a-list": {b"dl": b"[]", b"e": b'{"data": 1}'},
    "data-5000-deep": {b"e": b'{"data": ' + b"[" * 5000 + b"]" * 5000 + b"}"},
    "data-a-5000-digit-integer": {b"e": b'{"data": ' + b"9" * 5000 + b"}"},
}


def _around(rp: RedisProject, fields: dict[bytes, bytes]) -> str:
    """A valid event, `fields` as a raw entry, a valid event; the raw entry's id."""
    import redis

    from agentapps.events.streams import streams_for

    bus = streams_for(rp.project.boot().globals)
    bus.emit("jobs", "job", "before")
    entry: str = redis.Redis.from_url(rp.url).xadd(f"agentapps:{rp.namespace}:events:jobs", fields).decode()
    bus.emit("jobs", "job", "after")
    return entry


def _worker(rp: RedisProject, deliveries: int = 3) -> tuple[dict[str, Any], str]:
    result = rp.cli("worker", "jobs", "--group", "g", "--handler", "record", "--max-events", "3",
                    "--max-deliveries", str(deliveries), "--json", timeout=30)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout), result.stderr


def _dead_letters(rp: RedisProject) -> list[dict[str, Any]]:
    listed = rp.cli("run", "event-wait", "--topic", "jobs.dead-letter", "--timeout", "0")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)
    return found


@pytest.fixture
def jobs(redis_project: RedisProject) -> RedisProject:  # noqa: F811 - the fixture imported above
    redis_project.project.write("record.skill.py", RECORD)
    return redis_project


@POISON
@pytest.mark.parametrize("shape", SHAPES)
def test_an_entry_that_is_not_an_event_is_dead_lettered_at_once_and_listed(jobs: RedisProject, shape: str) -> None:
    entry = _around(jobs, SHAPES[shape])
    summary, stderr = _worker(jobs)
    assert (summary["succeeded"], summary["failed"], summary["deadLettered"]) == (2, 1, 1), stderr
    assert (jobs.root / "handled.txt").read_text().split() == ['"before"', '"after"']
    [letter] = _dead_letters(jobs)
    assert letter["data"]["event"]["id"] == entry and letter["data"]["reason"] == "malformed"
    assert letter["data"]["deliveries"] == 1


@POISON
@pytest.mark.parametrize("body", [b'{"data": NaN}', b'{"data": {"x": -Infinity}}'])
def test_a_body_with_non_finite_numbers_leaves_the_dead_letters_listable(jobs: RedisProject, body: bytes) -> None:
    entry = _around(jobs, {b"e": body})
    summary, stderr = _worker(jobs, deliveries=1)  # the handler's argument check refuses it: no retries
    assert summary["succeeded"] == 2 and summary["deadLettered"] == 1, stderr
    assert [letter["data"]["event"]["id"] for letter in _dead_letters(jobs)] == [entry]
