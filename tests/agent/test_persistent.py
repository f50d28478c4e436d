"""Persistent mode: between turns the agent waits for the user's next message through
`gateway-receive` (stdin lines on the command line); end of input ends the run cleanly."""

from __future__ import annotations

import json

PERSISTENT = {"persistent": True}


def test_each_stdin_line_is_the_next_message_and_end_of_input_ends_cleanly(agentic):
    agentic.skill("chat", [{"text": "Hello, what shall we do?"}, {"text": "Noted: first."},
                           {"code": "return memory.seen = 2"}, {"text": "Noted: second."}],
                  model=PERSISTENT)
    result = agentic.run("--json", "chat", input="first\n\n   \nsecond\n")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "Noted: second." and out["stop_reason"] == "input_ended"
    assert out["turns"] == 4
    assert agentic.messages() == ["first", "second"]  # blank lines are skipped


def test_no_input_at_all_ends_after_the_first_answer(agentic):
    agentic.skill("chat", [{"text": "Anyone there?"}], model=PERSISTENT)
    result = agentic.run("chat")
    assert result.returncode == 0 and result.stdout == "Anyone there?\n"


def test_finish_still_ends_a_persistent_run(agentic):
    agentic.skill("chat", [{"text": "Ready."}, {"code": "ctx.manager.finish('bye')"}], model=PERSISTENT)
    result = agentic.run("chat", input="stop now\nnever read\n")
    assert result.returncode == 0 and result.stdout == "bye\n"


def test_without_a_gateway_the_agent_continues_on_its_own(agentic):
    """In a server (no gateway), a persistent agent that polls its own inputs goes on."""
    agentic.skill("poller", [{"text": "Polling."}, {"code": "ctx.manager.finish('polled')"}],
                  model=PERSISTENT)
    assert agentic.project.invoke("poller") == "polled"
    assert "Continue with the task." in agentic.messages()


def test_a_project_can_shadow_the_gateway(agentic):
    agentic.code("gateway-receive", (
        "n = ctx.globals.cache_for('test').setdefault('n', 0)\n"
        "ctx.globals.cache_for('test')['n'] = n + 1\n"
        "return {'text': 'message %d' % n} if n < 2 else None"), params={"type": "object"})
    agentic.skill("chat", [{"text": "a"}, {"text": "b"}, {"text": "c"}], model=PERSISTENT)
    assert agentic.project.invoke("chat") == "c"
    assert agentic.messages() == ["message 0", "message 1"]


def test_agent_code_can_ask_the_gateway_itself(agentic):
    code = "ctx.manager.finish(await ctx.manager.invoke('gateway-receive', {}))"
    agentic.skill("asker", [{"code": code}])
    result = agentic.run("--json", "asker", input="from the user\n")
    assert json.loads(result.stdout)["result"] == {"text": "from the user", "from": "stdin"}
    ended = agentic.run("--json", "asker")
    assert ended.returncode == 0 and json.loads(ended.stdout)["result"] is None


def test_an_interrupt_between_a_calls_approval_and_its_start_still_stops_it():
    """The REPL's Ctrl-C may land after the tool call was let through but before its snippet runs:
    the snippet must stop as soon as it starts, not run to its end."""
    import asyncio

    from agentapps.gateway import Gateway

    async def scenario() -> bool:
        gateway = Gateway(lambda prompt: None)
        gateway.interrupt()  # nothing is running yet
        snippet = asyncio.ensure_future(asyncio.sleep(30))
        gateway.watch(snippet)
        try:
            await asyncio.wait_for(snippet, 2)
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(scenario()) is True
