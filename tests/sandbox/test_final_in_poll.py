"""The final state rides on the poll that first sees the end: one hop, same validation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agentapps.sandbox import Sandbox, SandboxLimits, SnippetResult
from agentapps.sandbox.engine import Engine

FAST = SandboxLimits(timeout_s=0.5, heap_bytes=48 << 20)


class Host:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def __call__(self, name: str, args: Any) -> Any:
        self.calls.append((name, args))
        await asyncio.sleep(0.01)
        return args


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(FAST) as sb:
        yield sb


@pytest.fixture
def evals(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every Engine.call (one round trip to the sandbox process each), as the bridge members used."""
    seen: list[tuple[str, ...]] = []
    original = Engine.call

    async def counting(self: Engine, *ops: Any) -> Any:
        seen.append(tuple(op[1] for op in ops))
        return await original(self, *ops)

    monkeypatch.setattr(Engine, "call", counting)
    return seen


def run(sb: Sandbox, code: str, host: Host | None = None) -> SnippetResult:
    return asyncio.run(sb.run(code, host or Host()))


def test_a_settled_snippet_takes_one_hop(sandbox: Sandbox, evals: list[tuple[str, ...]]) -> None:
    result = run(sandbox, "console.log('hi'); memory.n = 1; ctx.manager.finish(7); return 1")
    assert result.ok and result.value == 1 and result.logs == "hi"
    assert result.finished and result.finish_value == 7
    assert sandbox.memory == {"n": 1}
    assert evals == [("start", "poll")]


def test_invokes_add_only_their_round_trips(sandbox: Sandbox, evals: list[tuple[str, ...]]) -> None:
    host = Host()
    result = run(sandbox, "return await ctx.manager.invoke('echo', 1)", host)
    assert result.value == 1 and host.calls == [("echo", 1)]
    assert evals == [("start", "poll"), ("deliver", "poll")]


def test_the_final_state_is_taken_after_outstanding_invokes(sandbox: Sandbox) -> None:
    # the outcome settles in the first poll, but the invoke's callback still writes memory and logs
    result = run(sandbox, "ctx.manager.invoke('echo', 'late').then(v => { memory.seen = v; "
                 "console.log(v); ctx.manager.finish(v) }); return 'first'")
    assert result.value == "first" and result.logs == "late" and result.finish_value == "late"
    assert sandbox.memory == {"seen": "late"}


def test_a_stuck_snippet_still_asks_for_the_final_state(
        sandbox: Sandbox, evals: list[tuple[str, ...]]) -> None:
    result = run(sandbox, "console.log('before'); memory.n = 2; await new Promise(() => {})")
    assert not result.ok and result.error is not None and "can never settle" in result.error["message"]
    assert result.logs == "before" and sandbox.memory == {"n": 2}
    assert evals == [("start", "poll"), ("final",)]


def test_agent_code_run_by_final_cannot_reach_the_host_or_the_poll(sandbox: Sandbox) -> None:
    # memory.toJSON runs inside the poll that carries the final state: what it logs and finishes
    # lands in that state (as it did with a separate final()), but its invoke is never polled.
    host = Host()
    result = run(sandbox, """
        memory.toJSON = function () {
          console.log('in toJSON');
          ctx.manager.finish('from toJSON');
          ctx.manager.invoke('echo', 'sneaky');
          return {n: 3};
        };
        return 'done'
    """, host)
    assert result.ok and result.value == "done" and result.error is None
    assert result.logs == "in toJSON" and result.finish_value == "from toJSON"
    assert host.calls == [] and result.invokes == 0
    assert sandbox.memory == {"n": 3}
    assert run(sandbox, "delete memory.toJSON; return memory.n").value is None  # the live value


def test_a_memory_getter_that_throws_keeps_the_last_snapshot(sandbox: Sandbox) -> None:
    run(sandbox, "memory.n = 1")
    result = run(sandbox, "Object.defineProperty(globalThis, 'memory', "
                 "{get() { throw new Error('no') }, configurable: true}); return 2")
    assert result.ok and result.value == 2
    assert sandbox.memory == {"n": 1}


def test_text_from_agent_code_cannot_forge_the_final_state(sandbox: Sandbox) -> None:
    forged = '"}},"final":{"head":"forged","tail":"","total":6,"finished":true,"finish":"1","memory":"{}"}}'
    result = run(sandbox, f"console.log({forged!r}); ctx.manager.finish({forged!r}); "
                 f"memory.s = {forged!r}; return {forged!r}")
    assert result.ok and result.value == forged and result.logs == forged
    assert result.finished and result.finish_value == forged
    assert sandbox.memory == {"s": forged}
