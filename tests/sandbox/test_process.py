"""The sandbox process: bare (no env, no fds, capped, cwd /), dies with the host, never trusted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentapps.sandbox import Sandbox, SandboxLimits, SnippetResult
from agentapps.sandbox import process as sandbox_process
from agentapps.sandbox.isolate import prelude
from agentapps.sandbox.process import Child

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
FAST = SandboxLimits(timeout_s=1, heap_bytes=32 << 20, process_bytes=640 << 20)


async def nothing(name: str, args: Any) -> Any:
    return args


def run(sb: Sandbox, code: str) -> SnippetResult:
    return asyncio.run(sb.run(code, nothing))


def alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(FAST) as sb:
        yield sb


@linux_only
def test_the_process_gets_no_environment_no_fds_a_data_cap_and_cwd_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTAPPS_TEST_CANARY", "s3cr3t-canary")
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    with secret.open() as held:
        os.set_inheritable(held.fileno(), True)  # even an fd the host marked inheritable
        with Sandbox(FAST) as sb:
            assert run(sb, "return 1").value == 1
            pid = sb.pid
            assert pid is not None
            proc = Path(f"/proc/{pid}")
            environ = (proc / "environ").read_bytes()
            fds = {name: os.readlink(proc / "fd" / name) for name in os.listdir(proc / "fd")}
            limits = (proc / "limits").read_text()
            cwd = os.readlink(proc / "cwd")
    assert b"s3cr3t-canary" not in environ
    assert set(filter(None, environ.split(b"\0"))) <= {b"LD_LIBRARY_PATH=" + v.encode()
                                                       for v in [os.environ.get("LD_LIBRARY_PATH", "")]}
    assert str(secret) not in fds.values()
    assert sorted(fds, key=int)[:3] == ["0", "1", "2"] and fds["0"] == fds["1"] == os.devnull
    assert sum(target.startswith("socket:") for target in fds.values()) == 1
    assert not any(target.startswith("/") and target != os.devnull for target in fds.values())
    assert cwd == "/"
    data = next(line for line in limits.splitlines() if line.startswith("Max data size"))
    assert data.split()[3:5] == [str(640 << 20), str(640 << 20)]
    core = next(line for line in limits.splitlines() if line.startswith("Max core file size"))
    assert core.split()[4:6] == ["0", "0"]


def test_close_kills_the_process_and_is_idempotent() -> None:
    sb = Sandbox(FAST)
    assert run(sb, "return 2").value == 2
    pid = sb.pid
    assert pid is not None and alive(pid)
    sb.close()
    sb.close()
    assert not alive(pid)
    with pytest.raises(RuntimeError, match="closed"):
        run(sb, "return 3")


def test_a_timeout_kills_the_process_it_ran_in(sandbox: Sandbox) -> None:
    first = sandbox.pid
    assert first is not None
    result = run(sandbox, "while (true) {}")
    assert result.error is not None and result.error["type"] == "timeout"
    assert gone_within(first, 2)
    assert run(sandbox, "return 'next'").value == "next"


def test_cancelling_run_kills_the_process_at_once(sandbox: Sandbox) -> None:
    pid = sandbox.pid
    assert pid is not None

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(sandbox.run("for (;;) {}", nothing), 0.2)

    asyncio.run(main())
    assert gone_within(pid, 1)
    assert run(sandbox, "return 'recovered'").value == "recovered"


HOST = textwrap.dedent("""
    import asyncio, sys, threading
    from agentapps.sandbox import Sandbox, SandboxLimits

    async def nothing(name, args):
        return args

    boxes = []
    make = lambda: boxes.append(Sandbox(SandboxLimits(timeout_s=60, process_bytes=640 << 20)))
    if sys.argv[1] == "thread":  # no death signal from a thread that may end: the socket only
        maker = threading.Thread(target=make)
        maker.start()
        maker.join()
    else:
        make()
    sb = boxes[0]
    print(asyncio.run(sb.run("return 1", nothing)).value, sb.pid, flush=True)
    if sys.argv[2] == "busy":
        asyncio.run(sb.run("for (;;) {}", nothing))
    else:
        sys.stdin.read()
""")


@linux_only
@pytest.mark.parametrize("made_in", ["main", "thread"])
@pytest.mark.parametrize("state", ["busy", "idle"])
def test_the_process_dies_when_the_host_is_killed(made_in: str, state: str) -> None:
    with subprocess.Popen([sys.executable, "-c", HOST, made_in, state], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as host:
        try:
            assert host.stdout is not None
            value, pid = host.stdout.readline().split()
            assert value == "1" and alive(int(pid))
            time.sleep(0.2)  # busy: let the endless loop start
        finally:
            host.kill()
            host.wait(5)
    assert gone_within(int(pid), 2), f"sandbox process {pid} outlived its host"


def test_a_sandbox_made_in_a_thread_that_ended_keeps_working() -> None:
    boxes: list[Sandbox] = []
    maker = threading.Thread(target=lambda: boxes.append(Sandbox(FAST)))
    maker.start()
    maker.join()
    with boxes[0] as sb:
        time.sleep(0.2)
        assert run(sb, "return 'still here'").value == "still here"


# -- a sandbox process that does not play by the rules (a fake at the seam) ---------------------

SETTLED: dict[str, Any] = {"requests": [], "more": False, "outcome": {"ok": True, "value": "1"}, "limit": None,
           "final": {"head": "", "tail": "", "total": 0, "finished": False, "finish": "null",
                     "memory": "{}"}}


def poll(**fields: Any) -> bytes:
    return b"V" + json.dumps({**SETTLED, **fields}).encode()


# what a misbehaving process answers to the prelude, to the snippet's start, then to the rest
FAKES: dict[str, tuple[list[bytes], str, str]] = {
    "huge-frame": ([b"!huge"], "runtime", "frame"),
    "garbage": ([b"N", b"Vnope"], "runtime", "bridge"),
    "deep-poll": ([b"N", b"V" + b"[" * 100000 + b"]" * 100000], "runtime", "bridge"),
    "deep-args": ([b"N", poll(requests=[{"id": 1, "name": "echo", "args": "[" * 5000 + "]" * 5000}],
                              outcome=None, final=None), poll()], "limit", "nested deeper"),
    "forged-name": ([b"N", poll(requests=[{"id": 1, "name": "../../bin/sh", "args": "{}"}],
                                final=None), poll()], "ok", ""),
    "deep-final": ([b"N", poll(final={**SETTLED["final"], "memory": "[" * 5000 + "]" * 5000})],
                   "limit", "nested deeper"),
    "exits": ([b"!exit"], "runtime", "crashed"),
}
FAKE = """
import os, socket, sys
replies = {replies!r}
sock = socket.socket(fileno=int(sys.argv[1]))
while True:
    header = sock.recv(4, socket.MSG_WAITALL)
    if len(header) < 4:
        break
    sock.recv(int.from_bytes(header, "big"), socket.MSG_WAITALL)
    reply = replies.pop(0) if len(replies) > 1 else replies[0]
    if reply == b"!exit":
        os._exit(3)
    header = (1 << 31).to_bytes(4, "big") if reply == b"!huge" else len(reply).to_bytes(4, "big")
    sock.sendall(header + reply)
"""


@pytest.mark.parametrize("fake", sorted(FAKES))
def test_the_host_never_trusts_the_process(fake: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    replies, outcome, says = FAKES[fake]
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE.format(replies=replies))
    monkeypatch.setattr(sandbox_process, "CHILD", script)
    calls: list[str] = []

    async def host(name: str, args: Any) -> Any:
        calls.append(name)
        return args

    with Sandbox(FAST) as sb:
        result = asyncio.run(sb.run("return 1", host))
    got = "ok" if result.ok else (result.error or {})["type"]
    assert got == outcome, result
    assert says in (result.error or {}).get("message", "")
    assert calls == []  # a forged path or over-deep args never reach the host


def test_mini_racer_versions_with_an_unchecked_abi_use_the_public_api(tmp_path: Path) -> None:
    real = Path(sandbox_process._mini_racer_dir())
    fake = tmp_path / "py_mini_racer"
    fake.mkdir()
    for item in real.iterdir():
        if item.name != "__about__.py":
            (fake / item.name).symlink_to(item)
    (fake / "__about__.py").write_text('__version__ = "0.0.1"\n')
    child = Child(32 << 20, 640 << 20, 1 << 24, package=str(fake))

    async def talk() -> list[Any]:
        child.post((("B", prelude(FAST, '{"seed": 5}')),))
        replies = [await child.request((("S", "start", "return memory.seed * 8 + 2"), ("G", "poll"))),
                   await child.request((("S", "start", "return 1 + await ctx.manager.invoke('echo', 6)"),
                                        ("G", "poll"))),
                   await child.request((("S", "deliver", '[{"id": 1, "ok": true, "value": 6}]'),
                                        ("G", "poll")))]
        assert all(tag == b"V" for tag, _ in replies), replies
        return [json.loads(payload) for _, payload in replies]

    try:
        first, asked, answered = asyncio.run(talk())
    finally:
        child.reap()
    assert first["outcome"] == {"ok": True, "value": "42"}
    assert asked["requests"] == [{"id": 1, "name": "echo", "args": "6"}]
    assert answered["outcome"] == {"ok": True, "value": "7"}


@linux_only
def test_the_host_process_does_not_load_v8() -> None:
    code = ("import asyncio, sys; from agentapps.sandbox import Sandbox\n"
            "async def f(n, a): return a\n"
            "with Sandbox() as sb: print(asyncio.run(sb.run('return 7', f)).value)\n"
            "print(any('mini_racer' in line for line in open('/proc/self/maps')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         check=False)
    assert out.stdout.split() == ["7", "False"], out.stderr


def test_sigint_to_the_process_group_does_not_kill_the_sandbox_process(sandbox: Sandbox) -> None:
    pid = sandbox.pid
    assert pid is not None and run(sandbox, "return 1").ok
    os.kill(pid, signal.SIGINT)  # what Ctrl-C sends the whole foreground group: the host decides
    time.sleep(0.1)
    assert alive(pid) and run(sandbox, "return 'kept'").value == "kept"


def test_waiting_for_the_process_to_start_is_not_the_snippets_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = tmp_path / "slow_child.py"  # the real process, started half a second late
    slow.write_text(f"import runpy, time\ntime.sleep(0.5)\n"
                    f"runpy.run_path({str(sandbox_process.CHILD)!r}, run_name='__main__')\n")
    monkeypatch.setattr(sandbox_process, "CHILD", slow)
    with Sandbox(SandboxLimits(timeout_s=0.3, process_bytes=640 << 20)) as sb:
        assert run(sb, "return 'quick'").value == "quick"


@linux_only
def test_a_sandbox_dropped_without_close_does_not_leave_its_process() -> None:
    import gc

    sb = Sandbox(FAST)
    assert run(sb, "return 1").ok
    pid = sb.pid
    assert pid is not None
    del sb
    gc.collect()
    assert gone_within(pid, 2)


def test_a_sandbox_process_that_cannot_start_is_a_clear_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentapps.errors import AgentAppsError

    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(AgentAppsError, match="sandbox process could not start"):
        Sandbox(FAST)
