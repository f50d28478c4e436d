"""Callback refs across processes (`store: redis`): invoked by name from another process, and a
clear failure, never a hang, when the owner is gone."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import pytest

from agentapps.context.manager import invoke_root
from agentapps.errors import LimitError, SkillError

OWNER = '''
import os

frontmatter = {"name": "owner", "metadata": {"params": {"type": "object", "properties": {
    "mode": {"type": "string"}}}}}


async def run(ctx, args):
    invoke = ctx.manager.invoke
    ref = (await invoke("callback-create", {"label": "ask", "timeout": 20000}))["ref"]
    await invoke("state-set", {"key": "ref", "value": ref})
    call = await invoke("callback-wait", {"ref": ref, "timeout": 20000})
    if args.get("mode") == "crash":
        os._exit(9)
    if args.get("mode") == "release":
        await invoke("callback-release", {"ref": ref})
        return "released"
    await invoke("callback-respond", {"ref": ref, "id": call["id"], "result": {"got": call["args"], "pid": os.getpid()}})
    return "answered"
'''

CALLER = '''
frontmatter = {"name": "caller"}


async def run(ctx, args):
    ref = await ctx.manager.invoke("state-wait", {"key": "ref", "timeout": 20000})
    return await ctx.manager.invoke(ref, {"question": 42})
'''


@pytest.fixture
def pair(redis_project: Any) -> Any:
    redis_project.project.write("owner.skill.py", OWNER)
    redis_project.project.write("caller.skill.py", CALLER)
    return redis_project


def owner(rp: Any, mode: str = "answer") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentapps", "run", "owner", "--mode", mode], cwd=rp.root,
                            env=rp.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_ref_made_in_one_process_is_invoked_by_name_from_another(pair):
    proc = owner(pair)
    result = pair.cli("run", "--json", "caller", timeout=60)
    out, err = proc.communicate(timeout=30)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)["result"]
    assert answer["got"] == {"question": 42} and answer["pid"] == proc.pid
    assert proc.returncode == 0 and out.strip() == "answered", err


@pytest.mark.parametrize(("mode", "message"), [
    ("crash", "has no owner any more"),  # the owner died holding the call
    ("release", "was released before it answered"),
])
def test_a_call_whose_owner_is_gone_fails_clearly_instead_of_hanging(pair, mode, message):
    proc = owner(pair, mode)
    started = time.monotonic()
    result = pair.cli("run", "caller", timeout=60)
    proc.communicate(timeout=30)
    assert result.returncode == 1 and message in result.stderr
    assert time.monotonic() - started < 10
    after = pair.cli("run", "caller", timeout=60)  # the ref is dead for good
    assert after.returncode != 0


def test_an_owner_that_exits_releases_its_refs_at_once(pair):
    pair.project.write("make-ref.skill.py", '''
frontmatter = {"name": "make-ref"}

async def run(ctx, args):
    ref = (await ctx.manager.invoke("callback-create", {}))["ref"]
    await ctx.manager.invoke("state-set", {"key": "ref", "value": ref})
''')
    assert pair.cli("run", "make-ref").returncode == 0
    started = time.monotonic()
    result = pair.cli("run", "caller", timeout=60)
    assert result.returncode == 1 and "has no owner any more" in result.stderr
    assert time.monotonic() - started < 2.5  # not the heartbeat's expiry: the run's end released it


def test_a_remote_callback_times_out_in_milliseconds(redis_project):
    async def scenario(root: Any) -> Any:
        ref = (await invoke_root(root, "callback-create", {"timeout": 200, "store": "redis"}))["ref"]
        started = time.monotonic()
        with pytest.raises(LimitError, match="got no response within 0.2 s"):
            await invoke_root(root, ref, {})
        waited = time.monotonic() - started
        with pytest.raises(LimitError, match="arrived within 0.1 s"):
            await invoke_root(root, "callback-wait", {"ref": ref, "timeout": 100})
        released = await invoke_root(root, "callback-release", {"ref": ref})
        with pytest.raises(SkillError, match="no owner"):
            await invoke_root(root, ref, {})
        return waited, released

    waited, released = asyncio.run(asyncio.wait_for(scenario(redis_project.project.boot()), 20))
    assert 0.15 <= waited < 2 and released == {"released": True}
