"""`agentapps repl` in a real pseudo-terminal: a persistent agent, one line per message, Ctrl-C
cancels a turn, Ctrl-D ends the session, readline history and completion."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.support.terminal import CTRL_C, CTRL_D, Terminal
from tests.support.waiting import wait_for


@pytest.fixture
def talk(agentic):
    """A markdown skill played by agent-scripted; `talk(turns)` writes its script."""
    agentic.code("slow", "import asyncio, pathlib\n"  # slow.started: the tool call is under way
                 "(pathlib.Path(str(ctx.globals.config.project)) / 'slow.started').touch()\n"
                 "await asyncio.sleep(30)\nreturn 'slept'")

    def write(turns: list[dict[str, Any]]) -> Any:
        agentic.skill("talk", turns, model={"snippetTimeout": 60})
        return agentic

    return write


def asked(agentic: Any, message: str) -> bool:
    """The scripted model has been sent `message` (it logs a request before it replies)."""
    return any(message in r["input"] for r in agentic.requests())


def test_a_conversation_streams_text_and_one_line_per_tool_call(talk):
    agentic = talk([{"text": "Hi! How can I help?"}, {"text": "Counting.", "code": "return 1 + 1"},
                    {"text": "It is 2."}])
    term = Terminal(agentic.project, "repl", "talk")
    term.expect("> ")
    term.send("hello\n")
    term.expect("Hi! How can I help?")
    term.expect("> ")
    term.send("what is 1 + 1?\n")
    term.expect("ok invoke")
    term.expect("ms  return 1 + 1")
    term.expect("It is 2.")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    assert agentic.messages() == ["what is 1 + 1?"]  # history across turns: one conversation
    assert agentic.requests()[0]["input"] == ["hello"]
    history = (agentic.project.home / ".agent-apps" / "repl_history").read_text()
    assert "hello" in history and "what is 1 + 1?" in history


def test_task_is_the_first_message(talk):
    agentic = talk([{"text": "Done the task."}])
    term = Terminal(agentic.project, "repl", "talk", "--task", "summarize the repo")
    term.expect("Done the task.")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0
    assert agentic.requests()[0]["input"] == ["summarize the repo"]


def test_ctrl_c_cancels_the_current_turn_and_returns_to_the_prompt(talk):
    agentic = talk([{"text": "Ready."},
                    {"text": "Sleeping.", "code": "return await ctx.manager.invoke('slow', {})"},
                    {"text": "Back again."}])
    term = Terminal(agentic.project, "repl", "talk")
    term.expect("> ")
    term.send("start\n")
    term.expect("Ready.")
    term.expect("> ")
    term.send("sleep please\n")
    term.expect("Sleeping.")
    # the slow call has begun (a fixed 0.5 s after "Sleeping." was not always enough under load)
    wait_for(lambda: (agentic.project.root / "slow.started").exists())
    term.send(CTRL_C)
    took = term.expect("> ", timeout=10)
    assert took < 5 and "turn cancelled" in term.output
    term.send("never mind\n")
    term.expect("Back again.")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    interrupted = agentic.tool_results()[0]
    assert interrupted["ok"] is False and "Interrupted by the user" in interrupted["error"]
    assert agentic.messages()[-1].endswith("never mind") and "interrupted" in agentic.messages()[-1]


def test_ctrl_c_while_the_model_thinks_hides_that_turn(talk):
    """A model call in flight is not cut: its reply is awaited, hidden, and its tool calls refused."""
    agentic = talk([{"text": "Ready."}, {"text": "HIDDEN REPLY", "code": "return 'ran'", "delay": 1.5},
                    {"text": "After the interrupt."}])
    term = Terminal(agentic.project, "repl", "talk", "--task", "go")
    term.expect("Ready.")
    term.expect("> ")
    term.send("think hard\n")
    wait_for(lambda: asked(agentic, "think hard"))  # the model call is in flight
    term.send(CTRL_C)
    term.expect("turn cancelled")
    term.expect("> ")
    term.send("something else\n")
    term.expect("After the interrupt.")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    assert "HIDDEN REPLY" not in term.output
    assert agentic.tool_results() == [{"denied": "Denied: The user interrupted this turn; this call did not run."}]


def test_a_second_ctrl_c_in_a_turn_ends_the_session(talk):
    agentic = talk([{"text": "Ready."}, {"text": "never", "delay": 30}])
    term = Terminal(agentic.project, "repl", "talk", "--task", "go")
    term.expect("Ready.")
    term.expect("> ")
    term.send("think\n")
    wait_for(lambda: asked(agentic, "think"))  # the model call is in flight
    term.send(CTRL_C)
    term.expect("turn cancelled")
    time.sleep(0.3)
    term.send(CTRL_C)
    assert term.close(timeout=10) == 130, term.output


def test_ctrl_c_at_the_prompt_clears_the_line_and_ctrl_d_exits(talk):
    agentic = talk([{"text": "unused"}])
    term = Terminal(agentic.project, "repl", "talk")
    term.expect("> ")
    term.send("half a thought")
    time.sleep(0.2)
    term.send(CTRL_C)
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    assert agentic.requests() == []  # nothing was sent to the model


def test_tab_completes_skill_names(talk):
    agentic = talk([{"text": "unused"}])
    term = Terminal(agentic.project, "repl", "talk")
    term.expect("> ")
    term.send("skill-desc\t")
    term.expect("skill-describe")
    time.sleep(0.2)
    term.send(CTRL_C)
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0


def test_a_skill_written_between_turns_can_be_used_in_the_next_turn(talk):
    agentic = talk([{"text": "Ready."}, {"code": "return await ctx.manager.invoke('fresh', {})"},
                    {"text": "Used it."}])
    term = Terminal(agentic.project, "repl", "talk", "--task", "go")
    term.expect("Ready.")
    term.expect("> ")
    agentic.code("fresh", "'new skill ran'")  # written after the session started
    term.send("use the new skill\n")
    term.expect("Used it.")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    assert agentic.tool_results()[0] == {"ok": True, "result": "new skill ran"}


def test_a_skill_with_returns_or_code_is_refused(agentic, project):
    agentic.skill("typed", [], returns={"type": "object"})
    result = project.cli("repl", "typed")
    assert result.returncode == 2 and "returns" in result.stderr
    agentic.code("codey", "1")
    assert project.cli("repl", "codey").returncode == 2


def test_piped_lines_work_without_a_terminal(talk):
    agentic = talk([{"text": "One."}, {"text": "Two."}])
    result = agentic.project.cli("repl", "talk", input="first\nsecond\n")
    assert result.returncode == 0, result.stderr
    assert "One." in result.stderr and "Two." in result.stderr
    assert json.dumps(agentic.messages()) == json.dumps(["second"])


def test_declared_secrets_are_redacted_in_the_session(agentic):
    agentic.skill("talk", [{"text": "The token is s3cr3t-value-123."}], meta={"env": ["REPL_TOKEN"]})
    term = Terminal(agentic.project, "repl", "talk", "--task", "tell me", REPL_TOKEN="s3cr3t-value-123")
    term.expect("The token is")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0
    assert "s3cr3t-value-123" not in term.output and "[redacted:REPL_TOKEN]" in term.output


def test_a_line_typed_during_a_turn_is_the_next_message_without_a_prompt(talk):
    agentic = talk([{"text": "Ready."}, {"text": "Thinking it over.", "delay": 1.5}, {"text": "Answered both."}])
    term = Terminal(agentic.project, "repl", "talk", "--task", "go")
    term.expect("Ready.")
    term.expect("> ")
    term.send("think hard\n")
    wait_for(lambda: asked(agentic, "think hard"))  # the model call is in flight
    term.send("and keep it short\n")
    term.expect("queued: sent as your next message")
    term.expect("Thinking it over.")
    term.expect("> and keep it short")  # sent as soon as the turn ended: no prompt waited for it
    term.expect("Answered both.")
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    assert [r["input"] for r in agentic.requests()[1:]] == [["think hard"], ["and keep it short"]]


def test_steer_stops_the_running_call_and_the_model_takes_the_message_next(talk):
    agentic = talk([{"text": "Ready."},
                    {"text": "Sleeping.", "code": "return await ctx.manager.invoke('slow', {})"},
                    {"text": "Steered."}])
    term = Terminal(agentic.project, "repl", "talk", "--task", "go")
    term.expect("Ready.")
    term.expect("> ")
    term.send("sleep please\n")
    wait_for(lambda: (agentic.project.root / "slow.started").exists())
    term.send("/steer wake up and count\n")
    term.expect("steering: the running tool calls stop")
    took = term.expect("Steered.", timeout=10)
    assert took < 5  # not the 30 s the call sleeps
    term.expect("> ")
    term.send(CTRL_D)
    assert term.close() == 0, term.output
    assert "turn cancelled" not in term.output
    stopped = agentic.tool_results()[0]
    assert stopped["ok"] is False and stopped["error"].startswith("Interrupted: the user steered the run")
    assert agentic.requests()[-1]["input"][1:] == ["wake up and count"]  # after the stopped call's result


def test_ctrl_d_during_a_turn_ends_the_session_once_the_queued_message_is_answered(talk):
    agentic = talk([{"text": "Ready."}, {"text": "Thinking it over.", "delay": 1.5}, {"text": "Last answer."}])
    term = Terminal(agentic.project, "repl", "talk", "--task", "go")
    term.expect("Ready.")
    term.expect("> ")
    term.send("think hard\n")
    wait_for(lambda: asked(agentic, "think hard"))
    term.send("one more thing\n")
    term.expect("queued")
    term.send(CTRL_D)
    term.expect("the session ends after this turn")
    assert term.close() == 0, term.output
    assert "Last answer." in term.output
    assert [r["input"] for r in agentic.requests()[1:]] == [["think hard"], ["one more thing"]]
