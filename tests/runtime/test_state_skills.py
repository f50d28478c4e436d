"""The state-* skills as a user meets them: real CLI runs, both stores, CAS, waits, corruption, keys."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentapps.context.manager import invoke_root
from agentapps.errors import ConflictError, LimitError
from tests.support.waiting import wait_for

INCR = '''
"""incr: add 1 to a state key `times` times with state-get + state-set(expect), retrying conflicts."""
from agentapps.errors import ConflictError

frontmatter = {"name": "incr", "metadata": {"params": {"type": "object", "properties": {
    "key": {"type": "string"}, "times": {"type": "integer"}}}}}

async def run(ctx, args):
    await ctx.manager.invoke("state-wait", {"key": "go", "timeout": 30000})  # start together
    done = conflicts = 0
    while done < args["times"]:
        current = await ctx.manager.invoke("state-get", {"key": args["key"]})
        try:
            await ctx.manager.invoke(
                "state-set", {"key": args["key"], "value": (current or 0) + 1, "expect": current})
        except ConflictError:
            conflicts += 1
            continue
        done += 1
    return {"conflicts": conflicts}
'''


def state(project: Any, *argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return project.cli("run", *argv, **kw)


def out(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_set_get_list_delete_round_trip_through_the_cli(project):
    assert out(state(project, "state-set", "--key", "user:alice:prefs",
                     "--arg-json", '{"value": {"theme": "dark", "n": [1, 2]}}')) == {"ok": True, "key": "user:alice:prefs"}
    assert out(state(project, "state-set", "--key", "user:bob", "--value", "hello")) == {"ok": True, "key": "user:bob"}
    assert out(state(project, "state-set", "--key", "other", "--arg-json", '{"value": 3}'))["ok"] is True
    assert out(state(project, "state-get", "--key", "user:alice:prefs")) == {"theme": "dark", "n": [1, 2]}
    assert state(project, "state-get", "--key", "user:bob").stdout == "hello\n"
    assert out(state(project, "state-list")) == ["other", "user:alice:prefs", "user:bob"]
    assert out(state(project, "state-list", "--prefix", "user:")) == ["user:alice:prefs", "user:bob"]
    assert out(state(project, "state-delete", "--key", "user:bob")) == {"ok": True, "existed": True}
    assert out(state(project, "state-delete", "--key", "user:bob")) == {"ok": True, "existed": False}
    missing = state(project, "--json", "state-get", "--key", "user:bob")
    assert json.loads(missing.stdout)["result"] is None
    assert (project.root / ".agent-apps" / "state").is_dir()


def test_compare_and_swap_conflict_exits_1_with_one_line_and_keeps_the_value(project):
    assert out(state(project, "state-set", "--key", "n", "--arg-json", '{"value": 1, "expect": null}'))["ok"]
    assert out(state(project, "state-set", "--key", "n", "--arg-json", '{"value": 2, "expect": 1}'))["ok"]
    lost = state(project, "state-set", "--key", "n", "--arg-json", '{"value": 9, "expect": 1}')
    assert lost.returncode == 1 and lost.stdout == ""
    assert "changed since it was read" in one_line_error(lost)
    absent = state(project, "state-set", "--key", "n", "--arg-json", '{"value": 9, "expect": null}')
    assert absent.returncode == 1, "null means absent: an existing key does not match it"
    assert out(state(project, "state-get", "--key", "n")) == 2


def test_wait_times_out_with_exit_4(project):
    started = time.monotonic()
    result = state(project, "state-wait", "--key", "never", "--timeout", "400")
    assert result.returncode == 4
    assert "Timed out after 0.4 s waiting for state key 'never'" in one_line_error(result)
    assert time.monotonic() - started >= 0.4


def test_wait_returns_at_once_when_the_key_exists(project):
    out(state(project, "state-set", "--key", "ready", "--arg-json", '{"value": {"ok": 1}}'))
    assert out(state(project, "state-wait", "--key", "ready", "--timeout", "0")) == {"ok": 1}


def test_a_key_set_by_another_process_wakes_state_wait(project):
    waiter = subprocess.Popen(
        [sys.executable, "-m", "agentapps", "run", "state-wait", "--key", "job:1:done", "--timeout", "30000"],
        cwd=project.root, env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        time.sleep(0.3)
        assert waiter.poll() is None, "state-wait returned before the key was set"
        out(state(project, "state-set", "--key", "job:1:done", "--arg-json", '{"value": {"exit": 0}}'))
        stdout, stderr = waiter.communicate(timeout=20)
    finally:
        waiter.kill()
    assert waiter.returncode == 0, stderr
    assert json.loads(stdout) == {"exit": 0}


def test_corrupt_state_file_is_reported_and_left_untouched(project):
    directory = project.root / ".agent-apps" / "state"
    directory.mkdir()
    corrupt = directory / "counter.json"
    corrupt.write_bytes(b'{"key": "counter", "value": 4')
    for argv in (["state-get", "--key", "counter"],
                 ["state-set", "--key", "counter", "--arg-json", '{"value": 5}'],
                 ["state-wait", "--key", "counter", "--timeout", "0"]):
        result = state(project, *argv)
        assert result.returncode == 1, argv
        line = one_line_error(result)
        assert str(corrupt) in line and "not valid JSON" in line and "untouched" in line
    assert corrupt.read_bytes() == b'{"key": "counter", "value": 4'


@pytest.mark.parametrize("key", ["../escape", "../../../../tmp/escape", "/etc/passwd", "a/../../b", ".hidden", ".."])
def test_keys_with_path_parts_stay_inside_the_state_folder(project, key):
    before = files_under(project.root.parent)
    out(state(project, "state-set", "--key", key, "--value", "x"))
    # the skill index cache under HOME/.cache and the run log are not state: leave them out
    created = {p for p in files_under(project.root.parent) - before
               if not p.is_relative_to(project.home / ".cache")
               and not p.is_relative_to(project.root / ".agent-apps" / "runs")}
    directory = project.root / ".agent-apps" / "state"
    assert created and all(p.parent == directory for p in created), created
    assert state(project, "state-get", "--key", key).stdout == "x\n"
    assert out(state(project, "state-list")) == [key]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["state-get"], "'key' is required"),
        (["state-get", "--key", "k", "--store", "disk"], "'disk' is not one of"),
        (["state-set", "--key", "k"], "'value' is required"),
        (["state-wait", "--key", "k", "--timeout", "-1"], "less than the minimum"),
        (["state-list", "--bogus", "1"], "has no param --bogus"),
    ],
)
def test_bad_arguments_exit_2(project, argv, message):
    result = state(project, *argv)
    assert result.returncode == 2
    assert message in one_line_error(result)


def test_memory_store_lives_in_the_process_and_wakes_waiters(project):
    root = project.boot()

    async def scenario() -> tuple[Any, ...]:
        waiting = asyncio.create_task(invoke_root(root, "state-wait", {"key": "k", "store": "memory", "timeout": 5000}))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await invoke_root(root, "state-set", {"key": "k", "value": [1], "store": "memory"})
        woken = await asyncio.wait_for(waiting, 2)
        listed = await invoke_root(root, "state-list", {"store": "memory"})
        on_disk = await invoke_root(root, "state-list", {})
        with pytest.raises(ConflictError):
            await invoke_root(root, "state-set", {"key": "k", "value": 2, "expect": [2], "store": "memory"})
        with pytest.raises(LimitError):
            await invoke_root(root, "state-wait", {"key": "nope", "store": "memory", "timeout": 50})
        return woken, listed, on_disk

    assert asyncio.run(scenario()) == ([1], ["k"], [])
    assert not (project.root / ".agent-apps" / "state").exists()


@pytest.mark.slow
def test_cas_from_separate_cli_processes(project):
    """A few real read-modify-write loops of state-get + state-set --expect, one process per call."""
    def worker(times: int) -> None:
        done = 0
        while done < times:
            current = out(state(project, "state-get", "--key", "c", real_process=True))
            value = json.dumps({"value": (current or 0) + 1, "expect": current})
            if state(project, "state-set", "--key", "c", "--arg-json", value, real_process=True).returncode == 0:
                done += 1

    threads = [threading.Thread(target=worker, args=(2,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert out(state(project, "state-get", "--key", "c")) == 6


@pytest.mark.slow
@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_eight_processes_of_25_cas_increments_give_exactly_200(project, attempt):
    project.write("incr.skill.py", INCR)
    procs = [
        subprocess.Popen([sys.executable, "-m", "agentapps", "run", "incr", "--key", "counter", "--times", "25"],
                         cwd=project.root, env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for _ in range(8)
    ]
    try:
        out(state(project, "state-set", "--key", "go", "--arg-json", '{"value": true}'))
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (stdout, stderr) in zip(procs, results, strict=True):
        assert p.returncode == 0, stderr
    assert out(state(project, "state-get", "--key", "counter")) == 200


# --- the redis store through the CLI ------------------------------------------------------------

@pytest.mark.slow
def test_eight_processes_of_25_cas_increments_on_redis_give_exactly_200(redis_project):
    redis_project.project.write("incr.skill.py", INCR)
    procs = [
        subprocess.Popen([sys.executable, "-m", "agentapps", "run", "incr", "--key", "counter", "--times", "25"],
                         cwd=redis_project.root, env=redis_project.env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    try:
        out(redis_project.cli("run", "state-set", "--key", "go", "--arg-json", '{"value": true}'))
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (_, stderr) in zip(procs, results, strict=True):
        assert p.returncode == 0, stderr
    assert out(redis_project.cli("run", "state-get", "--key", "counter")) == 200
    assert not (redis_project.root / ".agent-apps" / "state").exists()


def test_a_seed_style_ttl_and_wait_in_milliseconds_through_the_cli(redis_project):
    # each CLI call is a process start: on a loaded machine one can take longer than a short TTL,
    # so the key is asserted present only when the read finished well within it
    before_set = time.monotonic()
    out(redis_project.cli("run", "state-set", "--key", "lease", "--arg-json", '{"value": {"who": "me"}, "ttl": 3000}'))
    read = out(redis_project.cli("run", "state-get", "--key", "lease"))
    if time.monotonic() - before_set < 2.5:
        assert read == {"who": "me"}
    time.sleep(max(0.0, before_set + 3.3 - time.monotonic()))
    assert out(redis_project.cli("run", "state-get", "--key", "lease")) is None
    started = time.monotonic()
    result = redis_project.cli("run", "state-wait", "--key", "never", "--timeout", "300")
    assert result.returncode == 4 and time.monotonic() - started < 5


def test_redis_unreachable_is_one_line_exit_2_naming_host_and_port_but_never_the_password(redis_project):
    result = redis_project.cli("run", "state-get", "--key", "k",
                               AGENTAPPS_REDIS_URL="redis://user:sekret-pw-99@127.0.0.1:1/0")
    line = one_line_error(result)
    assert result.returncode == 2 and "127.0.0.1:1" in line
    assert "sekret-pw-99" not in result.stderr + result.stdout


def test_a_wait_in_flight_when_redis_goes_away_fails_with_exit_1_not_a_hang(redis_project, tmp_path):
    from tests.support.redis_server import PrivateRedis

    server = PrivateRedis(tmp_path / "redis").start()
    try:
        waiter = subprocess.Popen(
            [sys.executable, "-m", "agentapps", "run", "state-wait", "--key", "k", "--timeout", "60000"],
            cwd=redis_project.root, env=redis_project.env(AGENTAPPS_REDIS_URL=server.url,
                                                          AGENTAPPS_REDIS_RECONNECT="1"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # in flight: subscribed to the key's channel (a fixed pause lost the race on a busy machine,
        # and Redis went away before the run had reached it)
        import redis

        probe = redis.Redis.from_url(server.url)
        wait_for(lambda: probe.pubsub_channels() or waiter.poll() is not None, what="the wait to subscribe")
        probe.close()
        assert waiter.poll() is None, waiter.communicate()
        server.kill()
        started = time.monotonic()
        _, stderr = waiter.communicate(timeout=30)
    finally:
        server.stop()
    assert waiter.returncode == 1 and time.monotonic() - started < 10
    assert f"127.0.0.1:{server.port}" in stderr and len(stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("store", ["memory", "file"])
def test_runtime_skill_timeouts_are_milliseconds_as_the_seed_writes_them(project, store):
    """`state-wait {timeout: 300}` waits 0.3 s, not 5 minutes; so do callback-create and callback-wait."""
    async def scenario(root: Any) -> list[float]:
        took = []
        for skill, args in (("state-wait", {"key": "never", "timeout": 300, "store": store}),
                            ("callback-wait", {"timeout": 300})):
            if skill == "callback-wait":
                args["ref"] = (await invoke_root(root, "callback-create", {"timeout": 300}))["ref"]
            started = time.monotonic()
            with pytest.raises(LimitError):
                await invoke_root(root, skill, args)
            took.append(time.monotonic() - started)
        started = time.monotonic()
        with pytest.raises(LimitError, match="no response within 0.3 s"):
            await invoke_root(root, args["ref"], {})
        took.append(time.monotonic() - started)
        return took

    took = asyncio.run(asyncio.wait_for(scenario(project.boot()), 10))
    assert all(0.25 <= t < 3 for t in took), took
