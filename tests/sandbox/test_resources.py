"""Resource attacks: memory, compiler, time and nesting bombs from agent code.

Each ends in a structured error, the host process (this one) lives on, and the next snippet runs
with `memory` as it was: restored from the last snapshot when the sandbox had to be reset, or as
the failed snippet left it when the isolate survived. Before the process boundary, the first two
killed the host outright (SIGTRAP) or grew it to gigabytes, and the nesting ones ended the run
with a RecursionError.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agentapps.sandbox import Sandbox, SandboxLimits, SnippetResult

# small caps keep this fast: V8 needs 600 MiB of RLIMIT_DATA to start
LIMITS = SandboxLimits(timeout_s=1.5, heap_bytes=32 << 20, process_bytes=640 << 20)
NEST = "const nest = d => { let v = []; for (let i = 0; i < d; i++) v = [v]; return v; };\n"


class Host:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def __call__(self, name: str, args: Any) -> Any:
        self.calls.append((name, args))
        return args


@dataclass(frozen=True)
class Attack:
    id: str
    code: str
    outcome: str  # an error type, or several joined by "|"
    says: str = ""  # text the error message must contain
    slow: float | None = None  # the wall-clock bound, for attacks on the timeout itself


ATTACKS = [
    # V8 fatal errors that used to end the host process (SIGTRAP, nothing on stdout)
    Attack("repeat-2-28", 'return "x".repeat(2 ** 28)', "memory"),
    Attack("repeat-2-28-flattened", 'return "x".repeat(2 ** 28).indexOf("y")', "memory"),
    Attack("repeat-2-27-twice", 'return "x".repeat(2 ** 27).repeat(4).length', "runtime|memory"),
    Attack("concat-doubling", "let s = 'x'; for (;;) s += s", "runtime|memory"),
    Attack("concat-doubling-flattened", "let s = 'xy'; for (;;) { s = s + s; s.indexOf('z') }",
           "runtime|memory"),
    Attack("array-fill-2-27", "return new Array(2 ** 27).fill(1).length", "runtime", "too long"),
    Attack("array-from-1e9", "return Array.from({length: 1e9}).length", "runtime", "too long"),
    Attack("array-from-endless-iterator",
           "return Array.from((function* () { for (;;) yield 'xxxxxxxx' })()).length",
           "memory|timeout"),
    # (issue 22's attack suite: builtins the earlier rounds did not try)
    Attack("pad-start-2-28", "return 'x'.padStart(2 ** 28, 'ab').indexOf('z')", "runtime|memory"),
    Attack("spread-huge-string", "return [...'x'.repeat(2 ** 26)].length", "runtime|memory"),
    Attack("join-huge", "return new Array(2 ** 24).fill('x'.repeat(64)).join('').length",
           "runtime|memory"),
    # memory V8's heap limit does not count: the parser and compiler zones
    Attack("compiler-zone-eval", "eval('x=1;'.repeat(2 ** 25))", "memory|timeout"),
    Attack("compiler-zone-function", "new Function('x=1;'.repeat(2 ** 25))", "memory|timeout"),
    Attack("json-parse-huge-nesting", "return JSON.parse('['.repeat(1e7) + ']'.repeat(1e7))",
           "memory|runtime"),
    Attack("heap-bomb-in-microtasks", "const a = []; const f = () => { a.push(JSON.stringify("
           "'x'.repeat(1 << 16) + a.length)); return Promise.resolve().then(f) }; f(); return 1",
           "memory|timeout"),
    # time: builtins that ran seconds past the timeout in-process (V8 termination waits for them)
    Attack("regex-bomb", "return /^(a+)+$/.test('a'.repeat(40) + 'b')", "timeout", slow=1.0),
    Attack("builtin-encode-uri", "return encodeURIComponent('\\u00e9'.repeat(2 ** 26)).length",
           "timeout|memory", slow=1.0),
    Attack("builtin-replace-callback",
           "return 'x'.repeat(2 ** 24).replace(/x/g, () => 'yy').length", "timeout|memory",
           slow=1.0),
    # recursion and nesting (a RecursionError in the host ended the whole run)
    Attack("deep-recursion", "const f = n => f(n + 1); f(0)", "runtime", "Maximum call stack"),
    Attack("deep-return", NEST + "return nest(5000)", "limit", "nested deeper than 100"),
    Attack("deep-return-parsed", "return JSON.parse('['.repeat(5000) + ']'.repeat(5000))",
           "limit", "nested deeper than 100"),
    Attack("deep-finish", NEST + "ctx.manager.finish(nest(5000)); return 1", "limit",
           "finish value is nested deeper than 100"),
    Attack("deep-memory", NEST + "memory.deep = nest(5000)", "limit",
           "`memory` is nested deeper than 100"),
    Attack("deep-invoke-args", NEST + "return await ctx.manager.invoke('echo', nest(5000))",
           "limit", "invoke args are nested deeper than 100"),
    Attack("deep-invoke-args-caught", NEST + "try { await ctx.manager.invoke('echo', "
           "{a: nest(5000)}) } catch (e) {} return 'swallowed'", "limit", "nested deeper"),
    Attack("deep-invoke-args-all", NEST + "return await Promise.all([1, 2, 3].map(i => "
           "ctx.manager.invoke('echo', nest(100 * i))))", "limit", "nested deeper"),
    # size of what crosses to the host
    Attack("huge-return", "return 'x'.repeat(5 << 20)", "limit", "return value"),
    Attack("huge-finish", "ctx.manager.finish('x'.repeat(5 << 20)); return 1", "limit",
           "finish value"),
    Attack("huge-memory", "memory.big = 'x'.repeat(5 << 20)", "limit", "`memory`"),
    Attack("huge-memory-multibyte", "memory.big = '\\u00e9'.repeat(3 << 20)", "limit",
           "`memory` is"),
]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(LIMITS, memory={"kept": True}) as sb:
        yield sb


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
@pytest.mark.attack("resource bombs")
def test_resource_attack_is_contained(attack: Attack, sandbox: Sandbox) -> None:
    host = Host()

    async def attempt() -> tuple[SnippetResult, float, SnippetResult, SnippetResult]:
        before = await sandbox.run("memory.n = 1; return 'snapshot taken'", host)
        started = time.monotonic()
        result = await sandbox.run("memory.n = 2;\n" + attack.code, host)
        elapsed = time.monotonic() - started
        after = await sandbox.run("const n = memory.n; delete memory.big; delete memory.deep; "
                                  "memory.n = 0; return [n, memory.kept]", Host())
        return before, elapsed, result, after

    before, elapsed, result, after = asyncio.run(attempt())
    assert before.ok
    assert not result.ok and result.error is not None, result
    assert result.error["type"] in attack.outcome.split("|"), result.error
    assert attack.says in result.error["message"]
    if attack.slow is not None:
        assert elapsed < LIMITS.timeout_s + attack.slow, f"stopped after {elapsed:.2f} s"
    assert not result.finished and result.finish_value is None
    assert host.calls == []  # nothing over the limits reaches the host
    reset = "memory` restored" in result.error["message"]
    assert after.ok, after.error  # the next snippet runs, in a fresh process if need be
    assert after.value == [1 if reset else 2, True]


def test_deep_invoke_args_never_reach_the_host(sandbox: Sandbox) -> None:
    host = Host()
    result = asyncio.run(sandbox.run(NEST + "return await ctx.manager.invoke('echo', nest(100))",
                                     host))
    assert host.calls == [] and result.error is not None and result.error["type"] == "limit"
    ok = asyncio.run(sandbox.run(NEST + "return await ctx.manager.invoke('echo', nest(99))", host))
    assert ok.ok and len(host.calls) == 1  # nest(d) is d + 1 arrays deep: 100 is the most


def test_a_fresh_process_replaces_the_one_that_died(sandbox: Sandbox) -> None:
    first = sandbox.pid
    result = asyncio.run(sandbox.run('return "x".repeat(2 ** 28)', Host()))
    assert result.error is not None and result.error["type"] == "memory"
    assert "sandbox process" in result.error["message"] and "SIGTRAP" in result.error["message"]
    assert sandbox.pid is not None and sandbox.pid != first  # started at once, warm for the next


def test_at_least_25_resource_attacks() -> None:
    assert len(ATTACKS) >= 25
