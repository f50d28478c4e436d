"""The agent-code sandbox: return values, the invoke bridge, finish, memory, console, limits."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentapps.errors import AgentAppsError, ArgsError
from agentapps.sandbox import Sandbox, SandboxLimits, SnippetResult

FAST = SandboxLimits(timeout_s=0.5, heap_bytes=48 << 20)


class Host:
    """The Python side of ctx.manager.invoke: records calls and answers like a tiny skill set."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def __call__(self, name: str, args: Any) -> Any:
        self.calls.append((name, args))
        if name == "echo":
            return {"name": name, "args": args}
        if name == "sleep":
            await asyncio.sleep(args["s"])
            return args["tag"]
        if name == "fail":
            raise ValueError(args.get("why", "boom"))
        if name == "denied":
            raise AgentAppsError("Skill 'denied' is not in allowed-tools.", skill="denied")
        if name == "not-json":
            return object()
        raise KeyError(name)


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(FAST) as sb:
        yield sb


def run(sb: Sandbox, code: str, host: Host | None = None) -> SnippetResult:
    return asyncio.run(sb.run(code, host or Host()))


@pytest.mark.parametrize(("code", "value"), [
    ("return 1 + 1", 2),
    ("return 'héllo ☃'", "héllo ☃"),
    ("return {a: [1, 2.5, null, true], b: {c: 'd'}}", {"a": [1, 2.5, None, True], "b": {"c": "d"}}),
    ("return null", None),
    ("return undefined", None),
    ("", None),
    ("return () => 1", None),
    ("const x = await Promise.resolve(41); return x + 1", 42),
    ("return new Date(0)", "1970-01-01T00:00:00.000Z"),
])
def test_snippet_returns_its_json_value(sandbox: Sandbox, code: str, value: Any) -> None:
    result = run(sandbox, code)
    assert result.ok and result.error is None
    assert result.value == value


def test_invoke_round_trips_json_both_ways(sandbox: Sandbox) -> None:
    host = Host()
    result = run(sandbox, """
        const r = await ctx.manager.invoke('echo', {n: 1.5, s: 'x', list: [1, {deep: true}], none: null});
        return {r, types: [typeof r.args.n, Array.isArray(r.args.list), r.args.list[1].deep]};
    """, host)
    args = {"n": 1.5, "s": "x", "list": [1, {"deep": True}], "none": None}
    assert host.calls == [("echo", args)]
    assert type(host.calls[0][1]) is dict
    assert result.value == {"r": {"name": "echo", "args": args}, "types": ["number", True, True]}
    assert result.invokes == 1


class Rendezvous(Host):
    """`meet` calls answer only once `expected` of them are waiting at the same time: invokes that
    ran one after another would never all be waiting, and the first would hold the snippet until its
    timeout. Each then answers after a delay that finishes them in a different order than they began."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected = expected
        self.waiting = 0
        self.most_waiting = 0
        self.everyone: asyncio.Event | None = None

    async def __call__(self, name: str, args: Any) -> Any:
        if name != "meet":
            return await super().__call__(name, args)
        self.calls.append((name, args))
        self.everyone = self.everyone or asyncio.Event()
        self.waiting += 1
        self.most_waiting = max(self.most_waiting, self.waiting)
        if self.waiting == self.expected:
            self.everyone.set()
        await self.everyone.wait()
        await asyncio.sleep(args["s"])
        return args["tag"]


def test_promise_all_runs_invokes_concurrently(sandbox: Sandbox) -> None:
    # a condition, not a stopwatch: all three invokes are waiting in the host at once (a wall-clock
    # bound on three sleeps failed on a loaded machine); sequential invokes would time the snippet out
    host = Rendezvous(expected=3)
    result = run(sandbox, """
        return await Promise.all([3, 1, 2].map(i =>
            ctx.manager.invoke('meet', {s: 0.01 * i, tag: 't' + i})));
    """, host)
    assert result.ok, result.error
    assert result.value == ["t3", "t1", "t2"]  # in the order asked, though t1 answered first
    assert result.invokes == 3
    assert host.most_waiting == 3


def test_invoke_errors_are_catchable_errors_with_the_python_message(sandbox: Sandbox) -> None:
    result = run(sandbox, """
        try { await ctx.manager.invoke('fail', {why: 'disk on fire'}); }
        catch (e) { return [e instanceof Error, e.message]; }
    """)
    assert result.value == [True, "disk on fire"]
    denied = run(sandbox, "try { await ctx.manager.invoke('denied') } catch (e) { return e.message }")
    assert denied.value == "Skill 'denied' is not in allowed-tools."


def test_uncaught_invoke_error_fails_the_snippet_as_invoke(sandbox: Sandbox) -> None:
    result = run(sandbox, "await ctx.manager.invoke('fail', {why: 'nope'}); return 1")
    assert not result.ok
    assert result.error is not None and result.error["type"] == "invoke"
    assert "nope" in result.error["message"]


def test_a_result_that_is_not_json_becomes_an_invoke_error(sandbox: Sandbox) -> None:
    result = run(sandbox, "try { await ctx.manager.invoke('not-json') } catch (e) { return e.message }")
    assert "not JSON" in result.value


def test_unawaited_invokes_finish_before_the_snippet_ends(sandbox: Sandbox) -> None:
    host = Host()
    result = run(sandbox, """
        ctx.manager.invoke('sleep', {s: 0.05, tag: 'late'}).then(v => { memory.seen = v; });
        return 'returned first';
    """, host)
    assert result.value == "returned first"
    assert sandbox.memory == {"seen": "late"}


def test_finish_records_its_value(sandbox: Sandbox) -> None:
    result = run(sandbox, "ctx.manager.finish({answer: 42}); return 'after'")
    assert result.ok and result.finished
    assert result.finish_value == {"answer": 42}
    assert result.value == "after"
    assert not run(sandbox, "return 1").finished


def test_memory_is_seeded_from_python_and_persists_across_snippets() -> None:
    with Sandbox(FAST, memory={"count": 1, "notes": ["a"]}) as sb:
        assert run(sb, "memory.count += 1; memory.notes.push('b'); return memory.count").value == 2
        assert run(sb, "memory.count += 1; return memory").value == {"count": 3, "notes": ["a", "b"]}
        assert sb.memory == {"count": 3, "notes": ["a", "b"]}


def test_memory_keeps_closures_between_snippets_while_the_isolate_lives(sandbox: Sandbox) -> None:
    run(sandbox, "memory.count = 0; memory.bump = () => ++memory.count")
    assert run(sandbox, "memory.bump(); return memory.bump()").value == 2
    assert sandbox.memory == {"count": 2}  # the JSON snapshot drops the function


def test_memory_is_restored_from_the_last_snapshot_after_a_timeout(sandbox: Sandbox) -> None:
    run(sandbox, "memory.kept = 'yes'")
    timed_out = run(sandbox, "memory.lost = true; while (true) {}")
    assert timed_out.error is not None and timed_out.error["type"] == "timeout"
    assert "memory` restored" in timed_out.error["message"]
    assert run(sandbox, "return memory").value == {"kept": "yes"}


def test_a_memory_that_is_not_json_keeps_the_last_snapshot(sandbox: Sandbox) -> None:
    run(sandbox, "memory.n = 1")
    assert run(sandbox, "memory.n = 2; memory.self = memory; return memory.n").value == 2
    assert sandbox.memory == {"n": 1}
    assert run(sandbox, "delete memory.self; return memory.n").value == 2  # the live value
    assert sandbox.memory == {"n": 2}


def test_memory_seed_must_be_json() -> None:
    with pytest.raises(ArgsError, match="not JSON"):
        Sandbox(FAST, memory={"f": object()})


def test_console_output_is_captured_as_lines(sandbox: Sandbox) -> None:
    result = run(sandbox, """
        console.log('a', 1, {b: 2}, [3], null, undefined);
        console.info('info'); console.warn('warn'); console.error('error'); console.debug('debug');
        console.table('ignored');
        return 'x';
    """)
    assert result.logs == 'a 1 {"b":2} [3] null undefined\ninfo\nwarn\nerror\ndebug'


def test_console_output_keeps_head_and_tail_with_the_original_size() -> None:
    with Sandbox(SandboxLimits(timeout_s=2, max_output_chars=200)) as sb:
        result = run(sb, "for (let i = 0; i < 1000; i++) console.log('line ' + i)")
    total = sum(len(f"line {i}\n") for i in range(1000))
    assert result.ok
    assert result.logs.startswith("line 0\nline 1\n")
    assert result.logs.endswith("line 998\nline 999")
    assert f"console output was {total} characters" in result.logs
    assert len(result.logs) < 200 + 100


def test_logs_are_kept_when_the_snippet_throws(sandbox: Sandbox) -> None:
    result = run(sandbox, "console.log('before'); null.x")
    assert result.error is not None and result.error["type"] == "runtime"
    assert "TypeError" in result.error["message"] and "(line 1)" in result.error["message"]
    assert result.logs == "before"


def test_max_invokes_is_a_limit_even_when_caught() -> None:
    host = Host()
    with Sandbox(SandboxLimits(timeout_s=1, max_invokes=3)) as sb:
        result = run(sb, """
            let refused = 0;
            for (let i = 0; i < 5; i++) {
                try { await ctx.manager.invoke('echo', {i}); } catch (e) { refused++; }
            }
            return refused;
        """, host)
        assert [args["i"] for _, args in host.calls] == [0, 1, 2]
        assert result.invokes == 3
        assert not result.ok and result.error is not None
        assert result.error["type"] == "limit" and "3 ctx.manager.invoke" in result.error["message"]
        assert run(sb, "return await ctx.manager.invoke('echo', 1)", host).ok  # per snippet


def test_args_over_max_arg_bytes_never_reach_python() -> None:
    host = Host()
    with Sandbox(SandboxLimits(timeout_s=1, max_arg_bytes=100)) as sb:
        result = run(sb, "return await ctx.manager.invoke('echo', {s: 'x'.repeat(200)})", host)
        # multi-byte characters: under 100 UTF-16 units but over 100 UTF-8 bytes
        wide = run(sb, "return await ctx.manager.invoke('echo', {s: '☃'.repeat(40)})", host)
    assert host.calls == []
    for res in (result, wide):
        assert res.error is not None and res.error["type"] == "limit"
        assert "100-byte limit" in res.error["message"]


@pytest.mark.parametrize("code", ["return (", "const = 1", "await await", "import x from 'y'"])
def test_syntax_errors_are_structured(sandbox: Sandbox, code: str) -> None:
    result = run(sandbox, code)
    assert result.error is not None and result.error["type"] == "syntax"
    assert result.error["message"].startswith("SyntaxError: ")
    assert run(sandbox, "return 'still fine'").value == "still fine"


def test_a_promise_nothing_can_settle_fails_fast_instead_of_timing_out() -> None:
    with Sandbox(SandboxLimits(timeout_s=10)) as sb:
        started = time.monotonic()
        result = run(sb, "await new Promise(() => {}); return 1")
    assert result.error is not None and result.error["type"] == "runtime"
    assert "never settle" in result.error["message"]
    assert time.monotonic() - started < 1


def test_timeout_covers_a_slow_invoke(sandbox: Sandbox) -> None:
    result = run(sandbox, "return await ctx.manager.invoke('sleep', {s: 5, tag: 'x'})")
    assert result.error is not None and result.error["type"] == "timeout"
    assert result.invokes == 1


def test_sync_and_async_context_managers_close_the_isolate_thread() -> None:
    before = {t.name for t in threading.enumerate()}

    async def use() -> Any:
        async with Sandbox(FAST) as sb:
            return (await sb.run("return 7", Host())).value

    assert asyncio.run(use()) == 7
    sb = Sandbox(FAST)
    with sb:
        assert run(sb, "return 8").value == 8
    sb.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        run(sb, "return 9")
    assert {t.name for t in threading.enumerate()} == before


def test_invoke_runs_on_the_callers_loop_and_thread(sandbox: Sandbox) -> None:
    seen: list[tuple[Any, threading.Thread]] = []

    async def invoke(name: str, args: Any) -> Any:
        seen.append((asyncio.get_running_loop(), threading.current_thread()))
        return None

    async def main() -> Any:
        await sandbox.run("await ctx.manager.invoke('a'); await ctx.manager.invoke('b')", invoke)
        return asyncio.get_running_loop()

    loop = asyncio.run(main())
    assert seen == [(loop, threading.main_thread())] * 2


def test_cancelling_run_stops_the_agent_code_and_the_sandbox_recovers(sandbox: Sandbox) -> None:
    async def main() -> SnippetResult:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(sandbox.run("for (;;) await null", Host()), 0.1)
        return await sandbox.run("return 'next'", Host())

    assert asyncio.run(main()).value == "next"


def test_run_is_not_reentrant(sandbox: Sandbox) -> None:
    async def main() -> None:
        first = asyncio.create_task(
            sandbox.run("return await ctx.manager.invoke('sleep', {s: 0.1, tag: 1})", Host()))
        await asyncio.sleep(0.02)
        with pytest.raises(RuntimeError, match="re-entrant"):
            await sandbox.run("return 2", Host())
        assert (await first).value == 1

    asyncio.run(main())


def test_one_sandbox_serves_several_event_loops(sandbox: Sandbox) -> None:
    run(sandbox, "memory.x = 1")
    assert run(sandbox, "return ++memory.x").value == 2  # a second asyncio.run, a second loop


def test_the_host_never_imports_mini_racer_its_sandbox_process_does() -> None:
    code = ("import asyncio, sys, agentapps.sandbox as s; print('py_mini_racer' in sys.modules); "
            "sb = s.Sandbox(); print(asyncio.run(sb.run('return 6 * 7', None)).value); "
            "sb.close(); print('py_mini_racer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         check=False)
    assert out.stdout.split() == ["False", "42", "False"], out.stderr


def test_result_is_json_serialisable(sandbox: Sandbox) -> None:
    result = run(sandbox, "console.log('x'); return {a: 1}")
    assert json.loads(json.dumps(result.__dict__))["value"] == {"a": 1}


def test_set_timeout_applies_to_the_next_snippets() -> None:
    with Sandbox(SandboxLimits(timeout_s=10)) as sb:
        sb.set_timeout(0.2)
        started = time.monotonic()
        result = run(sb, "while (true) {}")
        assert result.error is not None and result.error["type"] == "timeout"
        assert "0.2 s" in result.error["message"] and time.monotonic() - started < 2


def test_lone_surrogates_from_agent_code_become_replacement_characters(sandbox: Sandbox) -> None:
    host = Host()
    result = run(sandbox, r"""
        console.log('log \ud800');
        memory.s = '\udfff'; ctx.manager.finish('fin \ud800');
        await ctx.manager.invoke('echo', {k: 'arg \udc00', '\ud800': 1});
        return ['ret \ud800', '\ud83d\ude00', '\\ud800 stays text'];
    """, host)
    assert result.ok, result.error
    assert result.value == ["ret \ufffd", "\U0001f600", "\\ud800 stays text"]
    assert result.logs == "log \ufffd" and result.finish_value == "fin \ufffd"
    assert host.calls == [("echo", {"k": "arg \ufffd", "\ufffd": 1})]
    assert sandbox.memory == {"s": "\ufffd"}
    json.dumps(result.__dict__, ensure_ascii=False).encode("utf-8")  # writable anywhere
