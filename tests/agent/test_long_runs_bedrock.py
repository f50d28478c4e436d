"""Long runs against the fake Bedrock (real boto3), metered as the service meters: the context
window, context editing with a model-written summary, the estimate against reported usage,
prompt caching and fallback models."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agent.test_long_runs import FIVE_KB, LOREM, PARAMS, SESSION, SONNET, trace_of
from tests.fakes.bedrock import Reply
from tests.fakes.bedrock_meter import Meter

HAIKU = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


def replies(turns: int, code: str = FIVE_KB) -> list[Reply]:
    uses = [Reply(tool_uses=[{"toolUseId": f"t{n}", "name": "invoke",
                              "input": {"code": f"// {n}\n" + code.format(n=n)}}]) for n in range(1, turns + 1)]
    return [*uses, Reply(text="All done.")]


def skill(agentic, name: str = "long", **model: Any) -> None:
    agentic.project.write(f"{name}.skill.md", "---\nname: " + name + "\ndescription: A long task.\n"
                          "metadata: " + json.dumps({"params": PARAMS, "session": SESSION, "model": {
                              "id": SONNET, "maxTurns": 250, "maxSteps": 250, **model}}) + "\n---\nDo it.\n")


def test_200_turns_fit_a_100k_window_with_a_summary_written_by_the_model(agentic, aws):
    fake, env = aws(replies(200), Meter(window=100_000))
    skill(agentic, contextWindow=100_000, contextEdit={"clearedChars": 2000})
    result = agentic.run("--json", "long", "--session-id", "b1", timeout=180, **env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["result"] == "All done."
    assert fake.meter.summaries >= 1 and len(fake.requests) == 201 + fake.meter.summaries
    assert max(fake.meter.tokens(r.body) for r in fake.requests) <= 100_000
    trace = trace_of(agentic, "b1")
    summaries = [e for e in trace if e.get("action") == "summarize"]
    assert len(summaries) == fake.meter.summaries
    assert all(e["by"] == "model" and e["summary"] == fake.meter.summary and e["usage"]["inputTokens"] > 0
               and e["model"] == SONNET for e in summaries)
    summary_calls = [r for r in fake.requests if "toolConfig" not in r.body]
    assert all(LOREM in r.body["messages"][0]["content"][0]["text"] for r in summary_calls)


def test_without_context_editing_the_window_ends_the_run_with_exit_4(agentic, aws):
    _, env = aws(replies(200), Meter(window=100_000))
    skill(agentic, contextWindow=100_000)
    result = agentic.run("--json", "long", "--session-id", "b2", timeout=180, **env)
    assert result.returncode == 4, result.stderr[-3000:]
    assert json.loads(result.stdout)["stop_reason"] == "context_window"
    assert "context window" in result.stderr and "model.contextEdit: true" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_service_refusing_a_long_request_is_the_same_limit_error(agentic, aws):
    """Our estimate thinks the window is larger than it is: Bedrock's own refusal still exits 4."""
    _, env = aws(replies(200), Meter(window=100_000))
    skill(agentic, contextWindow=400_000)
    result = agentic.run("--json", "long", "--session-id", "b3", timeout=180, **env)
    assert result.returncode == 4, result.stderr[-3000:]
    assert json.loads(result.stdout)["stop_reason"] == "context_window"
    assert "Input is too long for requested model" in result.stderr


def test_the_size_estimate_is_close_to_the_usage_bedrock_then_reports(agentic, aws):
    _, env = aws(replies(25), Meter())
    skill(agentic)
    result = agentic.run("long", "--session-id", "b4", timeout=120, **env)
    assert result.returncode == 0, result.stderr[-3000:]
    trace = trace_of(agentic, "b4")
    estimated = [e["contextTokens"] for e in trace if e["type"] == "turn-start"]
    reported = [sum(e["usage"][k] for k in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"))
                for e in trace if e["type"] == "turn-end"]
    errors = [abs(e - r) / r for e, r in zip(estimated, reported, strict=True)]
    assert errors[0] < 0.5, errors  # before any report: 4 characters a token
    assert errors[1] < 0.2, errors  # the first result, at the density of the system prompt
    assert max(errors[2:]) < 0.02, errors  # what was added, at the density of earlier additions


def test_the_system_prompt_and_tools_are_a_cache_point_so_later_turns_read_them(agentic, aws):
    fake, env = aws(replies(3, "return {n}"), Meter(cache_min=256))
    skill(agentic)
    out = json.loads(agentic.run("--json", "long", "--session-id", "b5", **env).stdout)
    first = fake.requests[0].body
    assert first["system"][-1] == {"cachePoint": {"type": "default"}}
    turns = [e["usage"] for e in trace_of(agentic, "b5") if e["type"] == "turn-end"]
    prefix = turns[0]["cacheWriteInputTokens"]
    assert prefix > 256 and turns[0]["cacheReadInputTokens"] == 0
    assert all(t["cacheReadInputTokens"] == prefix and t["cacheWriteInputTokens"] == 0 for t in turns[1:])
    assert out["usage"]["cacheReadInputTokens"] == 3 * prefix


@pytest.mark.parametrize("model, cache", [(SONNET, False), ("my-llm", None)])
def test_no_cache_point_when_turned_off_or_for_a_model_without_caching(agentic, aws, model, cache):
    fake, env = aws(replies(1, "return {n}"), Meter(cache_min=1))
    skill(agentic, id=model, **({} if cache is None else {"cache": cache}))
    out = json.loads(agentic.run("--json", "long", **env).stdout)
    assert all("cachePoint" not in str(r.body.get("system")) for r in fake.requests)
    assert out["usage"]["cacheReadInputTokens"] == out["usage"]["cacheWriteInputTokens"] == 0


@pytest.mark.parametrize("failure, reason", [
    (Reply.http_error("ThrottlingException", "Too many requests"), "throttled"),
    (Reply.http_error("ResourceNotFoundException", "Model not available in this region."), "not found"),
])
def test_the_fallback_model_takes_over(agentic, aws, failure, reason):
    fake, env = aws([failure, *replies(1, "return {n}")], Meter())
    skill(agentic, fallback=[HAIKU], maxAttempts=1)
    result = agentic.run("--json", "long", "--session-id", "b6", **env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [r.model_id for r in fake.requests] == [SONNET, HAIKU, HAIKU]
    assert f"fallback: {SONNET} -> {HAIKU} ({reason})" in result.stderr
    out = json.loads(result.stdout)
    assert list(out["models"]) == [HAIKU] and out["cost"] > 0
    (switch,) = [e for e in trace_of(agentic, "b6") if e["type"] == "fallback"]
    assert switch["from"] == SONNET and switch["to"] == HAIKU and switch["reason"] == reason


def test_without_fallback_throttling_still_fails(agentic, aws):
    fake, env = aws([Reply.http_error("ThrottlingException"), *replies(1)], Meter())
    skill(agentic, maxAttempts=1)
    result = agentic.run("long", **env)
    assert result.returncode == 1 and "kept throttling" in result.stderr and len(fake.requests) == 1


def test_a_compacted_run_records_its_summary_and_replays_offline(agentic, aws):
    fake, env = aws(replies(30), Meter())
    skill(agentic, contextWindow=20_000, contextEdit={"clearAt": 0.9, "compactAt": 0.5})
    recorded = agentic.run("--record", "run.json", "long", "--session-id", "b7", timeout=120, **env)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    script = json.loads((agentic.project.root / "run.json").read_text())["turns"]
    assert sum(1 for t in script if t.get("summary") == fake.meter.summary) == fake.meter.summaries >= 1
    replayed = agentic.run("--replay", "run.json", "long", "--session-id", "b8", timeout=120)
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert replayed.stdout == recorded.stdout == "All done.\n"
    again = [e for e in trace_of(agentic, "b8") if e.get("action") == "summarize"]
    assert again and all(e["summary"] == fake.meter.summary for e in again)


def test_replayed_offline_the_size_estimate_follows_the_recorded_usage(agentic, aws):
    """Record a Bedrock run, replay it: the offline provider's estimate of each request (which it
    logs as `tokens`) is within 3% of the input the recording says the model read."""
    _, env = aws(replies(25), Meter())
    skill(agentic, requests=str(agentic.requests_path))
    assert agentic.run("--record", "run.json", "long", timeout=120, **env).returncode == 0
    recorded = [sum(t["usage"].get(k, 0) for k in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"))
                for t in json.loads((agentic.project.root / "run.json").read_text())["turns"]]
    replayed = agentic.run("--replay", "run.json", "long", timeout=120)
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    estimated = [r["tokens"] for r in agentic.requests()]
    errors = [abs(e - r) / r for e, r in zip(estimated, recorded, strict=True)]
    assert max(errors[2:]) < 0.03, errors
