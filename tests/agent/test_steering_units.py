"""The inbox of a running agent (agent/steering.py): which turn-end answers take a steer or a
follow-up, and what the model is sent. Over a real server and terminal: tests/serve/test_steer.py
and tests/agent/test_repl.py."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from agentapps.agent.steering import (
    MAX_WAITING,
    SKIPPED,
    STEERED,
    Inbox,
    checked_message,
    directive_for,
)
from agentapps.errors import UsageError


class Recorded:
    def __init__(self) -> None:
        self.entries: list[tuple[str, dict[str, Any]]] = []

    def record(self, kind: str, **fields: Any) -> None:
        self.entries.append((kind, fields))


def _run(stop_reason: str | None = None, finished: bool = False) -> Any:
    return SimpleNamespace(stop_reason=stop_reason, finished=finished, result="the answer", turn=3,
                           trace=Recorded())


def test_a_steer_keeps_a_run_that_answered_going_with_the_message():
    inbox, run = Inbox(), _run("answered")
    inbox.steer("look at the tests instead")
    directive = inbox.at_turn_end(run, {"stop": True, "result": "the answer"}, 0)
    assert directive == {"continue": True, "message": "look at the tests instead"}
    assert run.stop_reason is None and run.result is None
    assert run.trace.entries == [("steer", {"text": "look at the tests instead", "turnNumber": 3})]
    assert not inbox.steered


def test_a_run_that_finish_ended_takes_nothing():
    inbox, run = Inbox(), _run("finished", finished=True)
    inbox.steer("too late")
    inbox.follow_up("also too late")
    stop = {"stop": True, "result": {"done": 1}}
    assert inbox.at_turn_end(run, stop, 1) == stop
    assert run.stop_reason == "finished" and run.trace.entries == []


def test_a_follow_up_waits_while_the_model_makes_tool_calls():
    inbox, run = Inbox(), _run()
    inbox.follow_up("next question")
    assert inbox.at_turn_end(run, {"continue": True}, 2) == {"continue": True}
    assert inbox.follow_ups == ["next question"]


def test_follow_ups_replace_a_persistent_agents_wait_for_input_in_order():
    inbox, run = Inbox(), _run()
    inbox.follow_up("first")
    inbox.follow_up("second")
    directive = inbox.at_turn_end(run, {"continue": True, "message": "Continue with the task.", "input": True}, 0)
    assert directive == {"continue": True, "message": "first\n\nsecond"}


def test_a_steer_follows_the_message_the_turn_already_had():
    inbox, run = Inbox(), _run()
    inbox.steer("use the other file")
    directive = inbox.at_turn_end(run, {"continue": True, "message": "Call finish(value)."}, 0)
    assert directive == {"continue": True, "message": "Call finish(value).\n\nuse the other file"}


def test_tool_calls_of_a_steered_step_are_skipped_and_a_denial_stays_a_denial():
    inbox, run = Inbox(), _run()
    call = {"type": "tool-call", "tool": "invoke", "args": {"code": "1"}}
    assert directive_for(inbox, run, call, None) is None
    inbox.steer("stop")
    assert directive_for(inbox, run, call, None) == {"deny": SKIPPED}
    assert directive_for(inbox, run, call, {"deny": "guarded"}) == {"deny": "guarded"}


def test_a_steer_cancels_the_running_snippet_and_its_result_says_so():
    async def scenario() -> tuple[dict[str, Any], bool]:
        inbox = Inbox()
        cancelled = asyncio.Event()

        async def snippet() -> dict[str, Any]:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return {"status": "success", "text": "slept"}

        running = asyncio.ensure_future(inbox.run_snippet(snippet(), 10_000))
        await asyncio.sleep(0.05)
        inbox.steer("wake up")
        return await asyncio.wait_for(running, 5), cancelled.is_set()

    result, cancelled = asyncio.run(scenario())
    assert cancelled and result["status"] == "error" and STEERED in result["text"]


def test_a_message_can_be_taken_while_an_agent_reads_the_inbox_or_before_an_agent_skill_starts():
    inbox = Inbox()
    assert inbox.untaken(runs_agent=True) is None  # its agent is still to start
    assert inbox.untaken(runs_agent=False) == "it runs no agent"
    inbox.open()  # a code skill's call of an agent skill: that agent reads it
    assert inbox.untaken(runs_agent=False) is None
    inbox.close()
    assert inbox.untaken(runs_agent=True) == inbox.untaken(runs_agent=False) == "its agent has already ended"
    inbox.open()  # the next agent of the same run
    assert inbox.untaken(runs_agent=False) is None


@pytest.mark.parametrize(("kind", "text", "error"), [
    ("nudge", "hi", "'kind' must be 'steer' or 'follow-up'."),
    ("steer", " \n", "'message' must be a non-empty string of at most 32000 characters."),
    ("follow-up", None, "'message' must be a non-empty string of at most 32000 characters."),
    ("steer", "x" * 32_001, "'message' must be a non-empty string of at most 32000 characters."),
])
def test_a_bad_message_is_a_usage_error(kind, text, error):
    with pytest.raises(UsageError) as refused:
        checked_message(kind, text)
    assert refused.value.message == error


def test_a_good_message_is_kept_as_sent():
    assert checked_message("follow-up", "x" * 32_000) == "x" * 32_000


def test_a_flood_of_messages_keeps_at_most_max_waiting_of_each_kind():
    inbox, run = Inbox(), _run("answered")
    kept = [inbox.follow_up(f"f{n}") for n in range(MAX_WAITING + 5)]
    kept += [inbox.steer(f"s{n}") for n in range(MAX_WAITING + 5)]
    assert kept.count(True) == 2 * MAX_WAITING and inbox.full("steer") and inbox.full("follow-up")
    directive = inbox.at_turn_end(run, {"stop": True, "result": "the answer"}, 0)
    assert directive["message"].split("\n\n") == [*(f"s{n}" for n in range(MAX_WAITING)),
                                                   *(f"f{n}" for n in range(MAX_WAITING))]
    assert not inbox.full("steer") and inbox.follow_up("room again")  # taken: there is room again
