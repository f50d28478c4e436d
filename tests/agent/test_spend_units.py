"""Usage, prices, budgets and the next-turn estimate: the pure parts behind cost reporting."""

from __future__ import annotations

import math

import pytest

from agentapps.agent import usage as u
from agentapps.agent.config import Limits, confine
from agentapps.agent.models import Price, base_id, cache_mode, facts
from agentapps.agent.spend import Spend, next_turn
from agentapps.errors import ConfigError, LimitError

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def report(i: int = 0, o: int = 0, r: int = 0, w: int = 0) -> dict[str, int]:
    return {"inputTokens": i, "outputTokens": o, "cacheReadInputTokens": r, "cacheWriteInputTokens": w}


@pytest.mark.parametrize("model, base", [
    (SONNET, "anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("amazon.nova-pro-v1:0", "amazon.nova-pro-v1:0"),
    ("llama3", "llama3"),
])
def test_an_inference_profile_prefix_is_dropped_to_find_the_model(model, base):
    assert base_id(model) == base


def test_the_price_table_knows_the_models_the_project_names():
    assert facts(SONNET) is not None and facts(SONNET).price == Price(3.0, 15.0, 0.3, 3.75)
    assert facts("anthropic.claude-3-5-haiku-20241022-v1:0").price.input == 0.8
    assert facts("llama3") is None and u.price_for("llama3", None) is None


def test_cost_is_each_counter_times_its_price_per_million():
    price = u.price_for(SONNET, None)
    assert u.cost(report(1000, 200, 5000, 2000), price) == pytest.approx(
        (1000 * 3 + 200 * 15 + 5000 * 0.3 + 2000 * 3.75) / 1e6)


def test_model_pricing_overrides_the_table_and_prices_unknown_models():
    pricing = {SONNET: {"input": 1, "output": 2}, "llama3": {"input": 0.5, "output": 1, "cacheRead": 0.1}}
    assert u.price_for(SONNET, pricing) == Price(1.0, 2.0, 1.0, 1.0)  # cache prices default to input
    assert u.price_for("llama3", pricing) == Price(0.5, 1.0, 0.1, 0.5)


@pytest.mark.parametrize("pricing", [["x"], {"m": {"input": 1}}, {"m": {"input": -1, "output": 1}},
                                     {"m": {"input": "cheap", "output": 1}}, {"m": 3}])
def test_bad_pricing_is_a_configuration_error(pricing):
    with pytest.raises(ConfigError, match="model.pricing"):
        u.price_for("m", pricing, "s")


def test_normalize_keeps_the_four_counters_and_drops_junk():
    assert u.normalize({"inputTokens": 5, "outputTokens": True, "totalTokens": 9, "cacheReadInputTokens": -1}) \
        == report(5)
    assert u.normalize(None) == report()


def test_a_sub_agents_spending_counts_for_every_enclosing_level():
    process = Spend(None)
    parent = Spend("parent", process)
    child = Spend("child", parent)
    child.add(SONNET, report(1000, 100), u.price_for(SONNET, None))
    parent.add("llama3", report(10, 1), None)
    assert child.tokens == 1100 and parent.tokens == 1111 and process.tokens == 1111
    assert child.cost == pytest.approx(0.0045)
    assert parent.cost is None  # llama3 has no price: a total would be a guess


def test_the_first_budget_the_next_turn_would_pass_stops_it_naming_the_budget():
    process = Spend(None, max_cost=1.0)
    run = Spend("triage", process, max_tokens=5000)
    price = u.price_for(SONNET, None)
    run.add(SONNET, report(3000, 500), price)
    run.admit(report(1000, 400), price, skill="triage", number=2)  # 4 900 tokens: fits
    with pytest.raises(LimitError, match=r"before turn 2: model.maxTokens of 'triage' is 5,000, "
                                         r"3,500 tokens \(\$0\.0165\) spent"):
        run.admit(report(1000, 501), price, skill="triage", number=2)
    with pytest.raises(LimitError, match=r"--max-cost is \$1"):
        Spend("other", process).admit(report(400_000), price, skill="other", number=1)


@pytest.mark.parametrize("history, context, expected", [
    ([], 1200, report(1200)),  # first turn: the provider's estimate, no output known yet
    ([report(900, 100), report(1100, 300)], 1500, report(1500, 200)),  # mean output so far
    ([report(100, 50, 800, 0)], 1100, report(300, 50, 800)),  # the cached prefix is read back
    ([report(100, 50, 0, 900)], None, report(150, 50, 900)),  # no estimate: last input + output
])
def test_the_next_turn_estimate(history, context, expected):
    assert next_turn(history, context) == expected


def test_the_next_turn_estimate_against_recorded_usage():
    """A recorded 6-turn run (input grows by each turn's output and tool result): the estimate of
    each next turn, given the provider's input estimate, is within 10% of what it then cost."""
    recorded = [report(2100, 180), report(2500, 140), report(2900, 210), report(3350, 160),
                report(3700, 190), report(4100, 170)]
    price = u.price_for(SONNET, None)
    for n in range(1, len(recorded)):
        guess = next_turn(recorded[:n], u.input_tokens(recorded[n]))
        assert u.cost(guess, price) == pytest.approx(u.cost(recorded[n], price), rel=0.10)


def test_budgets_are_limits_a_sub_agent_cannot_loosen():
    parent = Limits.from_config({"maxCost": 0.5, "maxTokens": 10_000}, "p")
    mine = confine({"maxCost": 5, "maxTokens": 1_000_000, "pricing": {"m": {"input": 0, "output": 0}},
                    "contextFull": "shell"}, {"pricing": {}}, parent)
    assert mine["maxCost"] == 0.5 and mine["maxTokens"] == 10_000
    assert mine["pricing"] == {} and "contextFull" not in mine
    assert Limits.from_config({}, "s").max_cost == math.inf


@pytest.mark.parametrize("setting, model, expected", [
    (None, SONNET, "system"), (None, "llama3", None), (True, "llama3", "system"),
    (False, SONNET, None), ("conversation", SONNET, "conversation"),
])
def test_where_cache_points_go(setting, model, expected):
    assert cache_mode(setting, model) == expected


def test_a_bad_cache_setting_is_a_configuration_error():
    with pytest.raises(ConfigError, match="model.cache"):
        cache_mode("always", SONNET, "s")
