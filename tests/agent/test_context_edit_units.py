"""Context editing on a Converse-shaped view: clearing old results, compaction, settings, `fit`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentapps.agent.context_edit import (
    SUMMARY_HEAD,
    EditSettings,
    clear_results,
    fit,
    plan_compaction,
    settings,
)
from agentapps.agent.context_view import View
from agentapps.errors import ConfigError


def conversation(turns: int, size: int = 5000) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "Read every file."}]}]
    for n in range(1, turns + 1):
        messages.append({"role": "assistant", "content": [
            {"text": f"Turn {n}."}, {"toolUse": {"toolUseId": f"t{n}", "name": "invoke", "input": {"code": f"// {n}"}}}]})
        messages.append({"role": "user", "content": [
            {"toolResult": {"toolUseId": f"t{n}", "content": [{"text": f"<{n}>" + "x" * size + f"</{n}>"}],
                            "status": "success"}}]})
    return messages


def result_text(message: dict[str, Any]) -> str:
    return message["content"][0]["toolResult"]["content"][0]["text"]


def test_old_results_are_cleared_to_head_and_tail_with_the_original_size():
    messages = conversation(6)
    original = [dict(m) for m in messages]
    assert clear_results(messages, keep=2, cleared_chars=100) == 4
    cleared = result_text(messages[2])
    assert cleared.startswith("<1>") and cleared.endswith("</1>") and "was 5007 characters" in cleared
    assert len(cleared) < 300
    assert result_text(messages[10]) == result_text(original[10])  # the last two are kept whole
    assert result_text(original[2]).endswith("x</1>")  # the old message objects are not changed
    assert clear_results(messages, keep=2, cleared_chars=100) == 0  # nothing twice


def test_compaction_keeps_the_task_and_the_last_turns_and_alternates_roles():
    messages = conversation(10)
    plan = plan_compaction(messages, keep_turns=3)
    assert plan is not None and plan.turns == 7
    assert "Read every file." in plan.prompt() and "Agent ran code:\n// 1" in plan.prompt()
    view = plan.apply("They found ten files.")
    assert [m["role"] for m in view] == ["user"] + ["assistant", "user"] * 3
    assert view[0]["content"][-1] == {"text": SUMMARY_HEAD + "They found ten files."}
    assert view[1]["content"][0] == {"text": "Turn 8."}
    again = plan_compaction([*view, *conversation(4)[1:]], keep_turns=1)
    assert again is not None and "They found ten files." in again.prompt()  # the earlier summary goes in
    assert len([b for b in again.apply("All of it.")[0]["content"] if SUMMARY_HEAD in b.get("text", "")]) == 1


def test_nothing_to_compact_when_only_kept_turns_remain():
    assert plan_compaction(conversation(2), keep_turns=4) is None


@pytest.mark.parametrize("config, expected", [
    ({}, EditSettings(False, 200_000)),
    ({"contextEdit": True, "contextWindow": 100_000}, EditSettings(True, 100_000)),
    ({"contextEdit": {"compactAt": 0.6, "keepTurns": 2}}, EditSettings(True, 200_000, compact_at=0.6, keep_turns=2)),
])
def test_settings(config, expected):
    assert settings(config, "llama3") == expected


@pytest.mark.parametrize("config", [{"contextEdit": "yes"}, {"contextEdit": {"clearAt": 2}},
                                    {"contextEdit": {"keepTurns": 1.5}}, {"contextWindow": 10}])
def test_bad_settings_are_configuration_errors(config):
    with pytest.raises(ConfigError, match="model.context"):
        settings(config, "llama3", "s")


def test_fit_clears_then_compacts_and_reports_both_to_the_hook():
    view = View(conversation(40, size=4000), fixed_chars=2000)
    events: list[dict[str, Any]] = []

    async def hook(event: dict[str, Any]) -> dict[str, Any]:
        events.append(event)
        return {}

    async def summarize(prompt: str) -> tuple[str, dict[str, int], str | None]:
        return "summary", {"inputTokens": len(prompt) // 4, "outputTokens": 5}, "m"

    edit = EditSettings(True, window=20_000, clear_at=0.5, compact_at=0.4, keep_results=3,
                        keep_turns=4, cleared_chars=2000)
    before = view.estimate()
    asyncio.run(fit(view, edit, hook, summarize))
    kinds = [(e["type"], e.get("action")) for e in events]
    assert kinds == [("context-edit", "clear"), ("context-full", None), ("context-edit", "summarize")]
    assert events[0]["before"] == before and events[2]["after"] == view.estimate() < 0.4 * 20_000
    assert events[2]["usage"]["outputTokens"] == 5 and events[2]["turns"] == 36


def test_a_hook_may_supply_the_summary_itself():
    view = View(conversation(12), fixed_chars=0)

    async def hook(event: dict[str, Any]) -> dict[str, Any]:
        return {"summary": "mine", "keep": 1} if event["type"] == "context-full" else {}

    async def summarize(prompt: str) -> tuple[str, dict[str, int], str | None]:
        raise AssertionError("the model must not be asked")

    asyncio.run(fit(view, EditSettings(True, 10_000, compact_at=0.2), hook, summarize))
    assert len(view.messages) == 3 and view.messages[0]["content"][-1]["text"].endswith("mine")


def test_the_estimate_calibrates_on_a_usage_report():
    view = View(conversation(1, size=400), fixed_chars=600)
    first = view.sending()
    assert first == pytest.approx(view.chars() / 4, abs=1)
    view.calibrate({"inputTokens": 100, "cacheReadInputTokens": 200})
    assert view.estimate() == pytest.approx(300, abs=1)


def test_the_view_measures_what_it_holds_after_appends_replacements_and_edits():
    view = View([{"role": "user", "content": [{"text": "a" * 100}]}], fixed_chars=10)
    assert view.chars() == 110
    view.messages.append({"role": "assistant", "content": [{"text": "b" * 50}]})
    assert view.chars() == 160
    view.messages[0] = {"role": "user", "content": [{"text": "c" * 20}]}  # a new message in its place
    assert view.chars() == 80
    view.messages[1]["content"] = [{"text": "d"}]  # changed in place: an edit says so
    view.edited()
    assert view.chars() == 31


def test_the_view_measures_only_what_was_appended_since_it_last_measured():
    view = View([{"role": "user", "content": [{"text": "a" * 100}]}], fixed_chars=10)
    for n in range(1, 50):
        view.messages.append({"role": "assistant", "content": [{"text": "b" * n}]})
        assert view.chars() == 110 + n * (n + 1) // 2
    view.messages[-1] = {"role": "assistant", "content": [{"text": "x"}]}  # a new last message
    assert view.chars() == 110 + 48 * 49 // 2 + 1
    del view.messages[1:]
    assert view.chars() == 110
