"""Long agent runs offline (agent-scripted): the context window, context editing, cost, budgets."""

from __future__ import annotations

import json
from typing import Any

import pytest

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
LOREM = "lorem ipsum dolor sit amet "  # 27 characters
FIVE_KB = "return 'turn {n} ' + '" + LOREM + "'.repeat(185)"  # a result of about 5 kB
SESSION = {"key": "args.sessionId", "capture": ["$agent"], "store": "file"}
PARAMS = {"type": "object", "properties": {"sessionId": {"type": "string"}}}


def long_script(turns: int) -> list[dict[str, Any]]:
    """`turns` code turns returning 5 kB each (the comment keeps the loop guard quiet), then an answer."""
    return [{"code": f"// {n}\n" + FIVE_KB.format(n=n)} for n in range(1, turns + 1)] + [{"text": "All done."}]


def trace_of(agentic, key: str) -> list[dict[str, Any]]:
    shown = agentic.project.cli("sessions", "show", key, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["entries"][-1]["agent"]


def long_skill(agentic, name: str, edit: Any) -> None:
    model = {"id": SONNET, "maxTurns": 250, "maxSteps": 250, "contextWindow": 100_000}
    if edit is not None:
        model["contextEdit"] = edit
    agentic.skill(name, long_script(200), model=model, params=PARAMS, meta={"session": SESSION})


def test_200_turns_of_5_kb_results_fit_a_100k_window_with_context_editing(agentic):
    long_skill(agentic, "long", {"clearedChars": 2000})
    result = agentic.run("--json", "long", "--session-id", "s1", timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    assert out["result"] == "All done." and out["turns"] == 201 and out["stop_reason"] == "answered"
    sizes = [r["tokens"] for r in agentic.requests()]
    assert len(sizes) == 201 and max(sizes) <= 100_000
    trace = trace_of(agentic, "s1")
    edits = [e for e in trace if e["type"] == "context-edit"]
    assert {e["action"] for e in edits} == {"clear", "summarize"}
    assert all(e["after"] < e["before"] for e in edits)
    assert any(e["type"] == "context-full" for e in trace)
    # the session keeps the whole history: every 5 kB result, though the model's view was cut
    results = [e["result"]["text"] for e in trace if e["type"] == "tool-result"]
    assert len(results) == 200 and all(len(r) > 5000 and LOREM in r for r in results)
    assert "context: summarized" in result.stderr and "context: cleared" in result.stderr


def test_without_context_editing_the_window_is_a_clear_limit_error(agentic):
    long_skill(agentic, "long", None)
    result = agentic.run("--json", "long", "--session-id", "s2", timeout=120)
    assert result.returncode == 4, result.stderr[-2000:]
    out = json.loads(result.stdout)
    assert out["stop_reason"] == "context_window" and 30 < out["turns"] < 200
    line = next(ln for ln in result.stderr.splitlines() if ln.startswith("error:"))
    assert "100,000-token context window" in line and "model.contextEdit: true" in line
    assert "Traceback" not in result.stderr
    assert max(r["tokens"] for r in agentic.requests()) <= 100_000  # the refused request never went out


def test_a_context_full_skill_can_write_the_summary_itself(agentic):
    agentic.code("keep-notes", "{'summary': f\"{args['turns']} turns read the files\", 'keep': 1}",
                 params={"type": "object"})
    agentic.skill("long", long_script(30), params=PARAMS, meta={"session": SESSION}, model={
        "maxTurns": 50, "maxSteps": 50, "contextWindow": 20_000, "contextEdit": {"compactAt": 0.5, "clearAt": 0.9},
        "contextFull": "keep-notes"})
    result = agentic.run("long", "--session-id", "s3", timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    summaries = [e for e in trace_of(agentic, "s3") if e.get("action") == "summarize"]
    assert summaries and all(e["by"] == "hook" and e["summary"].endswith("turns read the files")
                             for e in summaries)


def test_a_context_full_skill_can_stop_the_run(agentic):
    agentic.code("enough", "{'stop': 'this task is too big'}", params={"type": "object"})
    agentic.skill("long", long_script(30), model={
        "maxTurns": 50, "maxSteps": 50, "contextWindow": 20_000, "contextEdit": {"compactAt": 0.5, "clearAt": 0.9},
        "contextFull": "enough"})
    result = agentic.run("--json", "long", timeout=60)
    assert result.returncode == 4 and json.loads(result.stdout)["stop_reason"] == "context_full"
    assert "stopped by 'enough'" in result.stderr and "this task is too big" in result.stderr


USAGE = [{"inputTokens": 1200, "outputTokens": 80, "cacheReadInputTokens": 0, "cacheWriteInputTokens": 3000},
         {"inputTokens": 300, "outputTokens": 120, "cacheReadInputTokens": 3000, "cacheWriteInputTokens": 0},
         {"inputTokens": 450, "outputTokens": 60, "cacheReadInputTokens": 3000, "cacheWriteInputTokens": 0}]


def priced_script() -> list[dict[str, Any]]:
    return [{"code": "return 1", "usage": USAGE[0]}, {"code": "return 2", "usage": USAGE[1]},
            {"text": "Done.", "usage": USAGE[2]}]


def test_json_reports_usage_and_the_cost_computed_by_hand(agentic):
    agentic.skill("priced", priced_script(), model={"id": SONNET})
    result = agentic.run("--json", "priced")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["usage"] == {"inputTokens": 1950, "outputTokens": 260, "cacheReadInputTokens": 6000,
                            "cacheWriteInputTokens": 3000}
    by_hand = (1950 * 3.00 + 260 * 15.00 + 6000 * 0.30 + 3000 * 3.75) / 1_000_000  # Sonnet 4.5 per MTok
    assert out["cost"] == pytest.approx(by_hand, rel=1e-9) and round(by_hand, 6) == 0.022800
    assert out["models"] == {SONNET: {**out["usage"], "cost": out["cost"]}}
    assert "1950 in / 260 out tokens, 6000 cache read / 3000 cache write, $0.0228" in result.stderr


def test_model_pricing_prices_a_model_the_table_does_not_know(agentic):
    agentic.skill("priced", priced_script(), model={
        "id": "my-llm", "pricing": {"my-llm": {"input": 1, "output": 2, "cacheRead": 0.5}}})
    out = json.loads(agentic.run("--json", "priced").stdout)
    assert out["cost"] == pytest.approx((1950 * 1 + 260 * 2 + 6000 * 0.5 + 3000 * 1) / 1e6)


def test_an_unknown_model_shows_tokens_without_a_cost(agentic):
    agentic.skill("priced", priced_script(), model={"id": "my-llm"})
    result = agentic.run("--json", "priced")
    out = json.loads(result.stdout)
    assert out["cost"] is None and out["usage"]["outputTokens"] == 260
    assert "260 out tokens, 6000 cache read / 3000 cache write\n" in result.stderr


def budget_run(agentic, *flags: str, model: dict[str, Any] | None = None) -> Any:
    """Each turn costs 10 000 input + 500 output tokens = $0.0375 on Sonnet 4.5."""
    turns = [{"code": f"return {n}", "usage": {"inputTokens": 10_000, "outputTokens": 500}} for n in range(1, 6)]
    agentic.skill("spender", [*turns, {"text": "Done."}], model={"id": SONNET, **(model or {})})
    return agentic.run("--json", *flags, "spender")


@pytest.mark.parametrize("flags, model, says", [
    ((), {"maxCost": 0.1}, "model.maxCost of 'spender' is $0.1, 21,000 tokens ($0.0750) spent"),
    (("--max-cost", "0.1"), {}, "--max-cost is $0.1, 21,000 tokens ($0.0750) spent"),
    ((), {"maxTokens": 25_000}, "model.maxTokens of 'spender' is 25,000, 21,000 tokens ($0.0750) spent"),
])
def test_a_budget_stops_the_run_before_the_turn_that_would_pass_it(agentic, flags, model, says):
    # turn 3 would bring the total to about $0.1125 (31 500 tokens): it never starts
    result = budget_run(agentic, *flags, model=model)
    assert result.returncode == 4, result.stderr
    out = json.loads(result.stdout)
    assert out["turns"] == 2 and out["stop_reason"] == "budget" and out["cost"] == pytest.approx(0.075)
    assert "stopped before turn 3" in result.stderr and says in result.stderr
    assert len(agentic.requests()) == 2


def test_a_cost_budget_needs_a_price(agentic):
    result = budget_run(agentic, "--max-cost", "1", model={"id": "my-llm"})
    assert result.returncode == 2 and "has no known price" in result.stderr and "model.pricing" in result.stderr


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "cheap"])
def test_a_bad_max_cost_is_bad_input(agentic, value):
    result = agentic.run("--max-cost", value, "hello")
    assert result.returncode == 2 and "--max-cost" in result.stderr and "US dollars" in result.stderr


def test_a_daily_budget_in_the_main_skill_stops_the_next_run_of_another_process(agentic):
    # each code turn costs $0.0375; the project may spend $0.08 a day. The first process's run
    # spends $0.0375 and ends; the second's first turn brings the day to $0.075, and its next turn
    # (about $0.0375 more) would pass the cap, so it never starts
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n  model:\n"
                          "    budget: {daily: 0.08}\n---\n")
    turn = {"code": "return 1", "usage": {"inputTokens": 10_000, "outputTokens": 500}}
    agentic.skill("spender", [turn, {"text": "Done."}, turn, {"text": "never"}], model={"id": SONNET})
    first = agentic.project.cli("run", "--json", "spender", real_process=True)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["cost"] == pytest.approx(0.0375)
    second = agentic.project.cli("run", "--json", "spender", real_process=True)
    assert second.returncode == 4, second.stderr
    assert json.loads(second.stdout)["stop_reason"] == "budget"
    assert "stopped before turn 2: model.budget.daily is $0.08, $0.0750 was spent today" in second.stderr
    assert len(agentic.requests()) == 3
    runs = json.loads(agentic.project.cli("runs", "list", "--json").stdout)
    assert sum(r["cost"] for r in runs["runs"] if r["skill"] == "spender") == pytest.approx(0.075)


@pytest.mark.parametrize("budget, says", [
    ("{hourly: 1}", "model.budget.hourly is not a period: use daily or monthly"),
    ("{daily: -1}", "model.budget.daily must be a number of US dollars >= 0"),
    ("5", "model.budget must be a mapping such as {daily: 5.00, monthly: 100}"),
])
def test_a_bad_budget_is_refused_by_run_and_check(agentic, budget, says):
    agentic.skill("spender", [{"text": "Done."}], model={"id": SONNET})
    agentic.project.write("main.skill.md", f"---\nname: main\nmetadata:\n  role: main\n  model:\n"
                          f"    budget: {budget}\n---\n")
    result = agentic.run("spender")
    assert result.returncode == 2 and says in result.stderr
    assert says in agentic.project.cli("check").stdout


def test_a_budget_needs_the_run_log(agentic):
    agentic.skill("spender", [{"text": "Done."}], model={"id": SONNET, "budget": {"monthly": 10}})
    result = agentic.run("spender", AGENTAPPS_RUN_LOG="off")
    assert result.returncode == 2 and "AGENTAPPS_RUN_LOG is off" in result.stderr


def test_under_a_budget_a_skill_cannot_price_its_own_model_at_zero(agentic):
    # found by review: a skill's own model.pricing of 0 logged $0 and ran past the daily cap
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n  model:\n"
                          "    budget: {daily: 0.05}\n---\n")
    turn = {"code": "return 1", "usage": {"inputTokens": 10_000, "outputTokens": 500}}
    free = {SONNET: {"input": 0, "output": 0}}
    agentic.skill("spender", [turn, turn, {"text": "never"}], model={"id": SONNET, "pricing": free})
    result = agentic.run("--json", "spender")
    assert result.returncode == 4, result.stderr
    out = json.loads(result.stdout)
    assert out["stop_reason"] == "budget" and out["cost"] == pytest.approx(0.0375)  # Sonnet's own price
    assert "model.budget.daily is $0.05" in result.stderr
