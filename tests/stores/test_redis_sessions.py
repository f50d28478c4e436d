"""Sessions on Redis: the rolling window, appends from many processes, and the session middleware
choosing the store per skill (`metadata.session.store`) or from the project (`stores:`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.redis_server import URL, RedisProject, main_skill

REPO = Path(__file__).resolve().parents[2]
APPENDER = (
    "import sys\nfrom agentapps.secrets import Redactor\nfrom agentapps.stores.link import RedisLink\n"
    "from agentapps.stores.redissessions import RedisSessionStore\n"
    "link = RedisLink(sys.argv[1], sys.argv[2], Redactor()); link.connect()\n"
    "store = RedisSessionStore(link)\n"
    "for i in range(int(sys.argv[4])):\n    store.append('shared', {'w': sys.argv[3], 'i': i}, int(sys.argv[5]))\n"
)

CHAT = '''
frontmatter = {"name": "chat", "metadata": {
    "params": {"type": "object", "properties": {"sessionId": {"type": "string"}, "say": {"type": "string"}}},
    "session": SESSION}}

def run(ctx, args):
    return {"heard": args["say"], "before": [e["args"]["say"] for e in ctx.locals.session]}
'''


def appenders(rp: RedisProject, count: int, window: int) -> list[int]:
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, URL, rp.namespace, str(w), str(count), str(window)],
                              env={**os.environ, "PYTHONPATH": str(REPO)}) for w in range(4)]
    return [p.wait(timeout=60) for p in procs]


def load(rp: RedisProject, key: str) -> list[dict]:
    from agentapps.secrets import Redactor
    from agentapps.stores.link import RedisLink
    from agentapps.stores.redissessions import RedisSessionStore

    link = RedisLink(URL, rp.namespace, Redactor())
    link.connect()
    return RedisSessionStore(link).load(key)


def test_appends_from_four_processes_lose_nothing_and_keep_each_writer_in_order(redis_project):
    assert appenders(redis_project, 25, 500) == [0, 0, 0, 0]
    entries = load(redis_project, "shared")
    assert len(entries) == 100
    for w in range(4):
        assert [e["i"] for e in entries if e["w"] == str(w)] == list(range(25))


def test_the_rolling_window_holds_under_concurrent_appends(redis_project):
    assert appenders(redis_project, 25, 10) == [0, 0, 0, 0]
    assert len(load(redis_project, "shared")) == 10


def test_the_session_middleware_uses_the_skills_own_store_across_cli_runs(redis_project):
    redis_project.project.write("main.skill.md", main_skill(redis_project.namespace, "{namespace: " +
                                                           redis_project.namespace + "}"))
    redis_project.project.write("chat.skill.py", CHAT.replace("SESSION", '{"key": "args.sessionId", "store": "redis"}'))
    for word in ("one", "two"):
        result = redis_project.cli("run", "--json", "chat", "--sessionId", "s1", "--say", word)
        assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == {"heard": "two", "before": ["one"]}
    assert [e["args"]["say"] for e in load(redis_project, "s1")] == ["one", "two"]
    assert not (redis_project.root / ".agent-apps" / "sessions").exists()


def test_the_project_default_store_applies_to_sessions(redis_project):
    redis_project.project.write("chat.skill.py", CHAT.replace("SESSION", '"args.sessionId"'))
    for word in ("a", "b", "c"):
        result = redis_project.cli("run", "--json", "chat", "--sessionId", "s2", "--say", word)
    assert json.loads(result.stdout)["result"]["before"] == ["a", "b"]
    assert len(load(redis_project, "s2")) == 3


# what someone else put into a session's list (or a state key): never a raw decoder error
BAD_ITEMS = {
    "not JSON": b"{not json",
    "not UTF-8": b'"\xff\xfe"',
    "nested 100 000 deep": b"[" * 100_000 + b"]" * 100_000,
    "a 5,000-digit number": b"9" * 5000,
    "NaN": b"NaN",
    "an array": b"[1, 2]",
    "a number": b"5",
}


def _redis_client():
    import redis

    return redis.Redis.from_url(URL)


@pytest.mark.parametrize("case", list(BAD_ITEMS), ids=list(BAD_ITEMS))
def test_a_bad_session_item_on_redis_is_a_clear_error_and_left_untouched(redis_project, case):
    redis_project.project.write("chat.skill.py", CHAT.replace("SESSION", '"args.sessionId"'))
    name = f"agentapps:{redis_project.namespace}:session:s1"
    good = json.dumps({"skill": "chat", "args": {"say": "earlier"}}).encode()
    _redis_client().rpush(name, good, BAD_ITEMS[case])
    result = redis_project.cli("run", "chat", "--sessionId", "s1", "--say", "hi")
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: Session 's1' on the Redis server at ") and ": item 2 " in line, line
    assert f"left untouched — delete the Redis key '{name}'" in line
    assert "Error:" not in line and "internal error" not in line
    assert _redis_client().lrange(name, 0, -1) == [good, BAD_ITEMS[case]]


@pytest.mark.parametrize("case", ["not JSON", "not UTF-8", "a 5,000-digit number", "NaN"])
@pytest.mark.parametrize("skill", ["state-get", "state-wait"])
def test_a_bad_state_value_on_redis_is_a_clear_error(redis_project, case, skill):
    _redis_client().hset(f"agentapps:{redis_project.namespace}:state:k", "v", BAD_ITEMS[case])
    result = redis_project.cli("run", skill, "--key", "k", *(["--timeout", "100"] if skill == "state-wait" else []))
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: State key 'k' on the Redis server at ") and "left untouched" in line, line
