"""`agentapps serve` as a command: bad options and a busy port are one line and exit 2; signals stop
it promptly, open streams included, and a run that ends while it stops is still in the run log;
without a token it answers only to loopback names."""

from __future__ import annotations

import json
import signal
import socket
import time

import httpx2
import pytest

from tests.serve.conftest import start
from tests.serve.skills import GREET, SLOW
from tests.serve.test_api import Stream


@pytest.mark.parametrize(("argv", "says"), [
    (["--host", "0.0.0.0"], "not loopback) needs --token"),
    (["--port", "70000"], "--port must be 0-65535"),
    (["--timeout", "0"], "--timeout must be more than 0"),
    (["--redis", "redis://:hunter2@127.0.0.1:1/0"], "Redis at 127.0.0.1:1 is not reachable"),
])
def test_bad_options_are_one_line_and_exit_2(project, argv, says):
    result = project.cli("serve", *argv, timeout=30, real_process=True)
    assert result.returncode == 2 and says in result.stderr and "hunter2" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_port_in_use_is_one_line_and_exit_2(project):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = project.cli("serve", "--port", str(port), timeout=30, real_process=True)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: Cannot listen on 127.0.0.1:{port}: the port is in use (another " \
                                    "server?); pick another --port."


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 130)])
def test_a_signal_stops_the_server_and_its_open_streams_promptly(project, sig, code):
    project.write("slow.skill.py", SLOW)
    project.write("greet.skill.py", GREET)
    served = start(project)
    stream = Stream(served, "slow", {"seconds": 30}, token="")
    stream.wait_for("stream-start")
    started = time.monotonic()
    returncode, err = served.stop(sig)
    assert time.monotonic() - started < 4, err
    assert returncode == code, err
    got = dict(stream.finish())
    assert got["error"]["error"]["message"] == "The server is shutting down."
    assert "Traceback" not in err


NAP = """
import time
frontmatter = {"name": "nap", "description": "Notes that it started, then naps.",
               "metadata": {"params": {"type": "object"}, "schedule": "* * * * * *"}}

def run(ctx, args):
    with open("started.log", "a") as out:
        out.write("started\\n")
    time.sleep(0.5)
    return "rested"
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_that_ends_while_the_server_stops_is_in_the_run_log(project, sig):
    # the server waits for a scheduled run to end before it stops; its run-log record, made in the
    # last moments, used to die with the process: uvicorn raised the signal again before the cleanups
    # ran. Records wait 5 s to be batched here (0.05 s by default), so a record left to the batch
    # writer is lost every time, not only on a slow machine.
    project.write("nap.skill.py", NAP)
    served = start(project, first="import agentapps.runlog.batch as batch; batch.BATCH_SECONDS = 5")
    started = project.root / "started.log"
    deadline = time.monotonic() + 10
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    returncode, err = served.stop(sig)
    assert returncode == (-signal.SIGTERM if sig == signal.SIGTERM else 130), err
    runs = json.loads(project.cli("runs", "list", "--json").stdout)["runs"]
    assert len(runs) == len(started.read_text().splitlines()) >= 1, err
    assert {(r["skill"], r["exit_code"]) for r in runs} == {("nap", 0)}, err


def test_without_a_token_only_loopback_names_are_answered(project):
    project.write("greet.skill.py", GREET)
    served = start(project)
    try:
        with served.client() as client:
            assert client.post("/invocations", json={"skill": "greet", "args": {"name": "A"}}).status_code == 200
            for host in ("attacker.example:8000", "127.attacker.example:8000", "127.0.0.1.nip.io",
                         "127.0.0.1.attacker.example"):  # DNS names rebinding to 127.0.0.1
                rebound = client.get("/skills", headers={"Host": host, "Origin": f"http://{host}"})
                assert rebound.status_code == 403 and "loopback Host" in rebound.json()["error"]["message"], host
            for host in ("localhost", "127.0.0.1:1234", "[::1]:80", "127.1.2.3"):
                assert client.get("/skills", headers={"Host": host}).status_code == 200, host
    finally:
        served.stop()


def test_unreachable_after_stop(project):
    project.write("greet.skill.py", GREET)
    served = start(project)
    served.stop()
    with pytest.raises(httpx2.ConnectError), served.client() as client:
        client.get("/healthz")


@pytest.mark.parametrize(("patterns", "served_names", "unmatched"), [
    ("nothing-*", [], ["'nothing-*'"]),
    ("greet nothing-* #no-such-tag greet(name=Z*,$deny)", ["greet"], ["'nothing-*'", "'#no-such-tag'"]),
])
def test_allowed_tools_patterns_that_select_no_skill_are_named_in_a_warning(project, patterns, served_names,
                                                                            unmatched):
    project.write("greet.skill.py", GREET)
    served = start(project, "--allowed-tools", patterns)  # it still starts: a skill added later may match
    try:
        with served.client() as client:
            assert [s["name"] for s in client.get("/skills").json()["skills"]] == served_names
    finally:
        _, err = served.stop()
    [warning] = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warning.startswith("warning: agentapps serve: --allowed-tools ")
    assert all(pattern in warning for pattern in unmatched) and "'greet" not in warning
    assert ("no skill is served" in warning) == (not served_names)


def test_allowed_tools_that_all_select_a_skill_print_no_warning(project):
    project.write("greet.skill.py", GREET)
    served = start(project, "--allowed-tools", "gr* hello")
    _, err = served.stop()
    assert "warning" not in err


def test_requests_beyond_the_concurrency_wait_in_turn_up_to_the_queue_then_429(project):
    import concurrent.futures

    project.write("slow.skill.py", SLOW)
    served = start(project, "--concurrency", "1", "--queue", "2")
    try:
        def call(seconds: float) -> httpx2.Response:
            with served.client("") as client:
                return client.post("/invocations", json={"skill": "slow", "args": {"seconds": seconds}},
                                   timeout=30)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            first = pool.submit(call, 1.0)
            time.sleep(0.3)
            queued = [pool.submit(call, 0.1) for _ in range(2)]  # wait for the slot: no 429
            time.sleep(0.3)
            refused = call(0.1)  # one going and two waiting: the queue is full
            assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
            assert "1 going and 2 waiting" in refused.json()["error"]["message"]
            assert [f.result().status_code for f in (first, *queued)] == [200, 200, 200]
        assert call(0.1).status_code == 200  # every slot was handed back
    finally:
        served.stop()


def test_a_negative_queue_is_one_line_and_exit_2(project):
    result = project.cli("serve", "--queue", "-1", timeout=30, real_process=True)
    assert result.returncode == 2 and result.stderr.strip() == "error: --queue must be 0 or more, got -1."
