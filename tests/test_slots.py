"""Each subsystem owns its state: a `Slot` it declares once in its own package's `slots.py`, per
run or shared with the server. A served run gets fresh per-run slots and the server's shared ones,
decided by the slot's flag alone (no list of fields anywhere else)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

from agentapps.core.cleanup import register, run_cleanups
from agentapps.core.slots import Slot
from agentapps.runstate import Internals

PACKAGE = Path(__file__).resolve().parent.parent / "agentapps"

# A subsystem this test adds: its declarations are all it takes.
STARTED: list[str] = []
PER_RUN_LOG: Slot[list[str]] = Slot("test.per_run", lambda: STARTED.append("per run") or [], per_run=True)
SHARED_LOG: Slot[list[str]] = Slot("test.shared", lambda: STARTED.append("shared") or [])


def test_a_slot_starts_once_on_first_read_and_keeps_what_is_set():
    STARTED.clear()
    internals = Internals()
    assert STARTED == []  # nothing starts before it is read
    log = internals.get(PER_RUN_LOG)
    assert internals.get(PER_RUN_LOG) is log and STARTED == ["per run"]
    internals.set(SHARED_LOG, ["mine"])
    assert internals.get(SHARED_LOG) == ["mine"] and STARTED == ["per run"]  # set, never started
    assert Internals().get(PER_RUN_LOG) is not log  # another process's run: its own
    assert "test.per_run" in repr(internals) and "test.shared" in repr(internals)


def test_a_new_slot_is_per_run_in_a_served_run_and_shared_otherwise(project):
    from agentapps.lifecycle.served import begin

    server = project.boot().globals
    server.internals.get(PER_RUN_LOG).append("server")
    server.internals.get(SHARED_LOG).append("server")
    first, second = begin(server), begin(server)
    first.g.internals.get(PER_RUN_LOG).append("first")
    second.g.internals.get(PER_RUN_LOG).append("second")
    first.g.internals.get(SHARED_LOG).append("first")
    second.g.internals.get(SHARED_LOG).append("second")
    assert server.internals.get(PER_RUN_LOG) == ["server"]
    assert first.g.internals.get(PER_RUN_LOG) == ["first"] and second.g.internals.get(PER_RUN_LOG) == ["second"]
    assert server.internals.get(SHARED_LOG) == ["server", "first", "second"]
    assert first.g.internals.get(SHARED_LOG) is second.g.internals.get(SHARED_LOG)
    third = begin(server)
    third.g.internals.set(SHARED_LOG, ["replaced"])  # setting a shared slot sets the server's
    assert server.internals.get(SHARED_LOG) == ["replaced"] == first.g.internals.get(SHARED_LOG)


def test_concurrent_served_runs_keep_their_session_keys_apart(project):
    project.write("mark.skill.py", '''
        import asyncio

        from agentapps.runtime import note_session

        frontmatter = {"name": "mark", "description": "Notes a session key, waits, reads it back.",
                       "metadata": {"params": {"type": "object", "properties": {"key": {"type": "string"}}}}}


        async def run(ctx, args):
            note_session(ctx.globals.internals, args["key"])
            await asyncio.sleep(0.01)  # the other run notes its own meanwhile
            note_session(ctx.globals.internals, args["key"] + "-again")  # the first one stays
            from agentapps.runlog.slots import SESSION_KEY
            return ctx.globals.internals.get(SESSION_KEY)
    ''')
    from agentapps.lifecycle.served import begin, invoke
    from agentapps.runlog.slots import SESSION_KEY

    server = project.boot().globals
    runs = [begin(server) for _ in range(3)]

    async def serve() -> list[Any]:
        return list(await asyncio.gather(*(invoke(run, "mark", {"key": f"k{n}"}) for n, run in enumerate(runs))))

    assert asyncio.run(serve()) == ["k0", "k1", "k2"]
    assert [run.g.internals.get(SESSION_KEY) for run in runs] == ["k0", "k1", "k2"]
    assert server.internals.get(SESSION_KEY) is None


def test_what_a_served_run_registers_to_clean_up_is_the_servers(project):
    from agentapps.lifecycle.served import begin

    server = project.boot().globals
    run = begin(server)
    done: list[str] = []

    async def close() -> None:
        done.append("closed")

    register(run.g.internals, close)
    run.g.internals.children.add(12345)
    assert 12345 in server.internals.children
    asyncio.run(run_cleanups(server.internals))
    assert done == ["closed"] and run.g.internals.cleanups == [] == server.internals.cleanups
    register(begin(server).g.internals, close)  # a run served after the cleanups: the same list
    asyncio.run(run_cleanups(server.internals))
    assert done == ["closed", "closed"]


def _declarations() -> list[tuple[str, str, str]]:
    """(module, variable, slot name) of every `X = Slot(...)` in agentapps."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call) \
                    and getattr(node.value.func, "id", None) == "Slot" and isinstance(node.target, ast.Name):
                name = node.value.args[0]
                assert isinstance(name, ast.Constant), f"{path}: a slot's name is a literal"
                found.append((path.relative_to(PACKAGE).as_posix(), node.target.id, str(name.value)))
    return found


def test_every_subsystem_declares_its_slots_in_its_own_slots_module_once():
    found = _declarations()
    assert len(found) >= 14  # events, stores, callbacks, agent, mcp, run log
    for module, variable, name in found:
        package = module.split("/")[0]
        assert module == f"{package}/slots.py", f"{variable} is declared in {module}, not {package}/slots.py"
        assert name.split(".")[0] == package, f"{name} is not named for {package}"
    assert len({name for _, _, name in found}) == len(found), "two slots share a name"


def test_per_run_slots_are_the_ones_a_run_of_its_own_would_start_afresh():
    from agentapps.agent import slots as agent
    from agentapps.callbacks import slots as callbacks
    from agentapps.events import slots as events
    from agentapps.mcp import slots as mcp
    from agentapps.runlog import slots as runlog
    from agentapps.stores import slots as stores

    declared = [value for module in (agent, callbacks, events, mcp, runlog, stores)
                for value in vars(module).values() if isinstance(value, Slot)]
    assert sorted(slot.name for slot in declared if slot.per_run) == [
        "agent.recorder", "agent.resumable", "agent.scripts", "agent.spend", "agent.ticket", "runlog.agent_totals",
        "runlog.session_key"]
