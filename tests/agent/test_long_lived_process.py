"""Agent runs in a long-lived process (a server, a worker): a finished run leaves nothing behind.
Each run registers per-run callback skills whose functions close over its context and state;
whatever the process derives from a definition must go when the definition does (issue 26)."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

from agentapps.context.context import Context
from agentapps.context.manager import invoke_root

RUNS = 8

# called by the agent's code mid-run: notes weak references to what only that run should hold
PROBE = """
import asyncio
import weakref
node = ctx
while node.target.tool.name != 'worker':
    node = node.parent
refs = ctx.globals.cache_for('test-probe').setdefault('refs', [])
refs.append(weakref.ref(node.target.locals))
refs += [weakref.ref(t.fn) for n, t in ctx.globals.lookup.memory.items() if n.startswith('agent-')]
if args.get('hang'):
    await asyncio.sleep(60)  # until the run is cut off, as a client that goes away cuts a stream
return len(refs)
"""


def _contexts() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Context))


def _worker(agentic, probe_args: str = "{}") -> Any:
    agentic.code("probe", PROBE)
    agentic.skill("worker", [{"code": f"ctx.manager.finish(await ctx.manager.invoke('probe', {probe_args}))"}],
                  allowed="probe")
    return agentic.project.boot()


def test_finished_agent_runs_free_their_context_and_callback_skills(agentic):
    root = _worker(agentic)

    async def many(n: int) -> None:
        for _ in range(n):
            await invoke_root(root, "worker", {})

    asyncio.run(many(4))  # the first runs fill the process's caches of the shared skills
    before = _contexts()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        asyncio.run(many(RUNS))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()

    refs = root.globals.cache_for("test-probe")["refs"]
    assert len(refs) == 3 * (RUNS + 4)  # each run: its served context's locals and two callbacks
    alive = [r() for r in refs if r() is not None]
    assert alive == []  # each run's state and its callback skills' functions are gone
    assert _contexts() <= before  # no Context of a finished run is left
    assert grown / RUNS < 4_000, f"{grown / RUNS:.0f} bytes kept per agent run"  # 19 KB before the fix
    assert not [n for n in root.globals.lookup.memory if n.startswith("agent-")]



def test_agent_runs_cut_off_mid_way_free_theirs_too(agentic):
    root = _worker(agentic, "{hang: true}")
    refs = root.globals.cache_for("test-probe").setdefault("refs", [])

    async def cut_off() -> None:
        seen = len(refs)
        run = asyncio.ensure_future(invoke_root(root, "worker", {}))
        while len(refs) == seen and not run.done():  # the probe has taken its notes and now hangs
            await asyncio.sleep(0.01)
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)

    async def many(n: int) -> None:
        for _ in range(n):
            await cut_off()

    before = _contexts()
    asyncio.run(many(5))
    gc.collect()  # a cut-off run's error holds its frames, and they hold the run: a cycle
    assert len(refs) == 3 * 5
    assert [r() for r in refs if r() is not None] == []
    assert _contexts() <= before
    assert not [n for n in root.globals.lookup.memory if n.startswith("agent-")]
