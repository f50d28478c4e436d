"""Callback refs: create, invoke while another task waits and responds, errors, release, allowed-tools."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from agentapps.callbacks.refs import create_callback_ref, release_callback_ref
from agentapps.callbacks.slots import CALLBACKS
from agentapps.context.context import Context
from agentapps.context.manager import invoke_root
from agentapps.errors import DeniedError, LimitError, SkillError, SkillNotFoundError, UsageError

ROUND_TRIP = '''
"""round-trip: two concurrent invocations of one callback, answered out of order by a responder."""
import asyncio

frontmatter = {"name": "round-trip"}

async def run(ctx, args):
    ref = (await ctx.manager.invoke("callback-create", {"timeout": 10000}))["ref"]

    async def responder():
        taken = [await ctx.manager.invoke("callback-wait", {"ref": ref, "timeout": 5000}) for _ in range(2)]
        for call in reversed(taken):
            await ctx.manager.invoke("callback-respond", {"ref": ref, "id": call["id"],
                                                          "result": call["args"]["n"] * 10})

    callers = [ctx.manager.invoke(ref, {"n": n}) for n in (1, 2)]
    *results, _ = await asyncio.gather(*callers, responder())
    await ctx.manager.invoke("callback-release", {"ref": ref})
    return {"ref": ref, "results": results}
'''

CALLER = '''
frontmatter = {{"name": "{name}", "allowed-tools": "{allowed}",
                "metadata": {{"params": {{"type": "object", "properties": {{"ref": {{"type": "string"}}}}}}}}}}

async def run(ctx, args):
    return await ctx.manager.invoke(args["ref"], {{"q": 1}})
'''


async def call(root: Context, skill: str, /, **args: Any) -> Any:
    return await invoke_root(root, skill, args)


def run(project: Any, scenario: Any) -> Any:
    root = project.boot()
    return asyncio.run(scenario(root))


async def answer_next(root: Context, ref: str, **response: Any) -> dict[str, Any]:
    taken = await call(root, "callback-wait", ref=ref, timeout=5000)
    await call(root, "callback-respond", ref=ref, id=taken["id"], **response)
    return taken


def test_create_returns_an_invokable_in_memory_skill(project):
    async def scenario(root: Context) -> Any:
        ref = (await call(root, "callback-create"))["ref"]
        tool = root.globals.lookup.resolve(ref)
        by_uri = root.globals.lookup.resolve(f"callback://{ref}")
        names = [s["name"] for s in await call(root, "skill-list", includeHidden=True)]
        return ref, tool, by_uri, names

    ref, tool, by_uri, names = run(project, scenario)
    assert re.fullmatch(r"callback-[0-9a-f]{8}", ref)
    assert tool is by_uri and tool.kind == "memory" and tool.uri == f"callback://{ref}"
    assert ref in names


def test_two_concurrent_invocations_are_answered_independently(project):
    async def scenario(root: Context) -> Any:
        ref = (await call(root, "callback-create", label="ask"))["ref"]
        first = asyncio.create_task(call(root, ref, question="a"))
        second = asyncio.create_task(call(root, f"callback://{ref}", question="b"))
        taken = [await call(root, "callback-wait", ref=ref, timeout=5000) for _ in range(2)]
        for invocation in reversed(taken):  # answer the later one first
            await call(root, "callback-respond", ref=ref, id=invocation["id"],
                       result={"answer": invocation["args"]["question"].upper()})
        return ref, taken, await first, await second

    ref, taken, first, second = run(project, scenario)
    assert ref.startswith("ask-")
    assert [t["args"] for t in taken] == [{"question": "a"}, {"question": "b"}]
    assert taken[0]["id"] != taken[1]["id"]
    assert (first, second) == ({"answer": "A"}, {"answer": "B"})


def test_an_invocation_made_before_anyone_waits_is_queued_for_the_next_wait(project):
    async def scenario(root: Context) -> Any:
        ref = (await call(root, "callback-create"))["ref"]
        invoking = asyncio.create_task(call(root, ref, n=1))
        await asyncio.sleep(0.01)
        waiting = asyncio.create_task(call(root, "callback-wait", ref=ref, timeout=5000))
        await asyncio.sleep(0.01)
        taken = await waiting
        await call(root, "callback-respond", ref=ref, id=taken["id"], result=None)
        return await invoking

    assert run(project, scenario) is None


def test_an_error_response_fails_the_invoker_with_that_message(project):
    async def scenario(root: Context) -> Any:
        ref = (await call(root, "callback-create"))["ref"]
        invoking = asyncio.create_task(call(root, ref))
        await answer_next(root, ref, error="the user said no")
        with pytest.raises(SkillError) as raised:
            await invoking
        with pytest.raises(UsageError, match="has no pending invocation"):
            await call(root, "callback-respond", ref=ref, id="deadbeef", result=1)
        return raised.value

    error = run(project, scenario)
    assert str(error) == "the user said no" and error.exit_code == 1


def test_release_fails_pending_invocations_and_unregisters_the_ref(project):
    async def scenario(root: Context) -> Any:
        ref = (await call(root, "callback-create"))["ref"]
        invoking = asyncio.create_task(call(root, ref, n=1))
        await asyncio.sleep(0.01)
        waiting = asyncio.create_task(call(root, "callback-wait", ref=ref, timeout=5000))
        orphan_ref = (await call(root, "callback-create"))["ref"]
        orphan_wait = asyncio.create_task(call(root, "callback-wait", ref=orphan_ref, timeout=5000))
        await asyncio.sleep(0.01)
        released = [await call(root, "callback-release", ref=r) for r in (ref, orphan_ref, ref)]
        outcomes = await asyncio.gather(invoking, waiting, orphan_wait, return_exceptions=True)
        with pytest.raises(SkillNotFoundError):
            await call(root, ref)
        with pytest.raises(UsageError, match="released, or never created"):
            await call(root, "callback-wait", ref=ref, timeout=0)
        return released, outcomes

    released, (invoked, waited, orphan) = run(project, scenario)
    assert released == [{"released": True}, {"released": True}, {"released": False}]
    assert waited["args"] == {"n": 1}, "the invocation was taken before the release"
    assert isinstance(invoked, SkillError) and "released before it answered" in str(invoked)
    assert isinstance(orphan, SkillError) and "released while waiting" in str(orphan)


def test_timeouts_end_waits_with_a_limit_error(project):
    async def scenario(root: Context) -> Any:
        ref = (await call(root, "callback-create", timeout=100))["ref"]
        with pytest.raises(LimitError, match="got no response within 0.1 s"):
            await call(root, ref)
        with pytest.raises(LimitError, match="No invocation of callback"):
            await call(root, "callback-wait", ref=ref, timeout=50)
        return root.globals.internals.get(CALLBACKS)[ref].pending

    assert run(project, scenario) == {}, "a timed-out invocation is no longer pending"


def test_kernel_function_callbacks_run_through_the_pipeline(project):
    async def scenario(root: Context) -> Any:
        g = root.globals

        async def double(ctx: Context, args: dict[str, Any]) -> Any:
            return {"twice": args["n"] * 2, "served": ctx.tool.name}

        ref = create_callback_ref(g, double, label="my-hook")
        slow = create_callback_ref(g, lambda ctx, args: asyncio.sleep(1), timeout=0.05)
        result = await call(root, ref, n=21)
        with pytest.raises(LimitError, match="did not finish within 0.05 s"):
            await call(root, slow)
        with pytest.raises(UsageError, match="served by a function"):
            await call(root, "callback-wait", ref=ref, timeout=0)
        with pytest.raises(UsageError, match="Callback label"):
            create_callback_ref(g, double, label="Bad_Label")
        assert release_callback_ref(g, ref) and not release_callback_ref(g, ref)
        assert not release_callback_ref(g, "skill-list"), "only callbacks can be released"
        return ref, result

    ref, result = run(project, scenario)
    assert re.fullmatch(r"my-hook-[0-9a-f]{8}", ref)
    assert result == {"twice": 42, "served": ref}


def test_callbacks_are_subject_to_the_callers_allowed_tools(project):
    project.write("open.skill.py", CALLER.format(name="open", allowed="callback-*"))
    project.write("closed.skill.py", CALLER.format(name="closed", allowed="callback-create state-*"))
    project.write("custom.skill.py", CALLER.format(name="custom", allowed="my-hook-*"))

    async def scenario(root: Context) -> Any:
        ref = create_callback_ref(root.globals, lambda ctx, args: "called")
        hook = create_callback_ref(root.globals, lambda ctx, args: "hooked", label="my-hook")
        allowed = [await call(root, "open", ref=ref), await call(root, "custom", ref=hook)]
        denied = []
        for caller, target in (("closed", ref), ("custom", ref), ("open", hook)):
            with pytest.raises(DeniedError) as raised:
                await call(root, caller, ref=target)
            denied.append(str(raised.value))
        return allowed, denied

    allowed, denied = run(project, scenario)
    assert allowed == ["called", "hooked"]
    expected = [r"Skill 'closed' may not call 'callback-[0-9a-f]{8}'", r"Skill 'custom' may not call 'callback-[0-9a-f]{8}'",
                r"Skill 'open' may not call 'my-hook-[0-9a-f]{8}'"]
    assert all(re.match(e, d) for e, d in zip(expected, denied, strict=True)), denied


def test_round_trip_through_the_cli(project):
    project.write("round-trip.skill.py", ROUND_TRIP)
    result = project.cli("run", "round-trip")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["results"] == [10, 20] and re.fullmatch(r"callback-[0-9a-f]{8}", out["ref"])


def test_error_responses_exit_1_through_the_cli(project):
    project.write("refuse.skill.py", '''
import asyncio

frontmatter = {"name": "refuse"}

async def run(ctx, args):
    ref = (await ctx.manager.invoke("callback-create", {}))["ref"]

    async def responder():
        taken = await ctx.manager.invoke("callback-wait", {"ref": ref})
        await ctx.manager.invoke("callback-respond", {"ref": ref, "id": taken["id"], "error": "nope, not today"})

    await asyncio.gather(ctx.manager.invoke(ref, {}), responder())
''')
    result = project.cli("run", "refuse")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["error: nope, not today"]


def test_callback_refs_are_not_listed_unless_hidden_skills_are(project):
    project.write("lister.skill.py", '''
        frontmatter = {"name": "lister"}

        async def run(ctx, args):
            made = await ctx.manager.invoke("callback-create", {"label": "probe"})
            shown = [s["name"] for s in await ctx.manager.invoke("skill-list", {})]
            everything = [s["name"] for s in await ctx.manager.invoke("skill-list", {"includeHidden": True})]
            return {"ref": made["ref"], "shown": made["ref"] in shown, "all": made["ref"] in everything}
        ''')
    result = project.invoke("lister")
    assert result["shown"] is False and result["all"] is True
