"""agent-anthropic end to end: the CLI and the real `anthropic` SDK against a loopback fake of the
Messages API (tests/fakes/anthropic.py), streaming included."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply

COUNT_CODE = "return await ctx.manager.invoke('wc', {text: memory.args.text})"
KEY = "sk-ant-test-fake-key-0123"
SONNET = "claude-sonnet-4-5-20250929"


@pytest.fixture
def anthropic(agentic) -> Iterator[Any]:
    """`anthropic(script, model=...)`: a fake server and the `ask` skill on agent-anthropic."""
    fakes: list[FakeAnthropic] = []
    agentic.code("wc", "len(args['text'].split())",
                 params={"type": "object", "properties": {"text": {"type": "string"}}})

    def start(script: list[Reply], model: str = f"{{provider: anthropic, id: {SONNET}}}") -> tuple[Any, dict[str, str]]:
        agentic.project.write("ask.skill.md", f"""
            ---
            name: ask
            description: Count words with a real model.
            allowed-tools: wc
            metadata:
              params: {{type: object, properties: {{text: {{type: string}}}}}}
              model: {model}
            ---
            Count the words of the text with the wc skill.
            """)
        fake = FakeAnthropic(script, key=KEY).start()
        fakes.append(fake)
        return fake, {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": KEY}

    yield start
    for fake in fakes:
        fake.close()


def _use(code: str, n: int = 1) -> dict[str, Any]:
    return {"id": f"toolu_{n}", "name": "invoke", "input": {"code": code}}


def test_streamed_text_a_tool_call_that_invokes_a_skill_usage_cost_and_cache(agentic, anthropic):
    fake, env = anthropic([
        Reply(text="Let me count.", tool_uses=[_use(COUNT_CODE)],
              usage={"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 2000}),
        Reply(text=["There are ", "three ", "words."],
              usage={"input_tokens": 150, "output_tokens": 5, "cache_read_input_tokens": 2000}),
    ])
    result = agentic.run("--json", "ask", "--text", "a b c", **env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "There are three words." and out["turns"] == 2
    assert out["usage"] == {"inputTokens": 250, "outputTokens": 25, "cacheReadInputTokens": 2000,
                            "cacheWriteInputTokens": 2000}
    # Sonnet 4.5: $3 input, $15 output, $0.30 cache read, $3.75 cache write per million tokens
    assert out["cost"] == pytest.approx((250 * 3 + 25 * 15 + 2000 * 0.3 + 2000 * 3.75) / 1e6)
    assert "Let me count." in result.stderr and "There are three words." in result.stderr
    first, second = fake.requests
    assert KEY in (first.headers.get("x-api-key"), first.headers.get("authorization", "")[7:])
    assert first.body["model"] == SONNET and first.body["stream"] is True
    (system,) = first.body["system"]
    assert "## wc" in system["text"] and system["cache_control"] == {"type": "ephemeral"}
    (tool,) = first.body["tools"]
    assert tool["name"] == "invoke" and tool["input_schema"]["required"] == ["code"]
    asked, answer = second.body["messages"][-2:]
    assert asked["role"] == "assistant"
    assert asked["content"][1] == {"type": "tool_use", "id": "toolu_1", "name": "invoke", "input": {"code": COUNT_CODE}}
    (block,) = answer["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1" and block["is_error"] is False
    assert json.loads(block["content"][0]["text"]) == {"ok": True, "result": 3}


def test_rate_limits_overload_and_broken_streams_are_retried(agentic, anthropic):
    fake, env = anthropic([Reply.error(429, "rate limited", retry_after="0"), Reply.error(529, "Overloaded"),
                           Reply(text="cut short by an error event", fail_after=4, stream_error="overloaded_error"),
                           Reply(text="cut short by a dropped connection", fail_after=4),
                           Reply(text="Done.")])
    result = agentic.run("ask", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n" and len(fake.requests) == 5
    assert "retrying (attempt 1" in result.stderr and "retrying (attempt 4" in result.stderr


def test_a_bad_key_is_one_line_naming_the_variable_exit_2(agentic, anthropic):
    fake, env = anthropic([Reply(text="never")])
    result = agentic.run("ask", **{**env, "ANTHROPIC_API_KEY": "sk-ant-wrong-key-abcdefgh"})
    assert result.returncode == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "rejected the API key" in line and "ANTHROPIC_API_KEY" in line
    assert "sk-ant-wrong" not in result.stderr and "Traceback" not in result.stderr
    assert len(fake.requests) == 1


def test_the_fallback_model_takes_over_when_the_first_is_overloaded(agentic, anthropic):
    fake, env = anthropic([Reply.error(529, "Overloaded"), Reply(text="From Haiku.")],
                          model=f"{{provider: anthropic, id: {SONNET}, maxAttempts: 1, fallback: [claude-haiku-4-5]}}")
    result = agentic.run("--json", "ask", **env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "From Haiku." and list(out["models"]) == ["claude-haiku-4-5"]
    assert [r.body["model"] for r in fake.requests] == [SONNET, "claude-haiku-4-5"]
    assert "fallback:" in result.stderr


def test_an_anthropic_run_is_recorded_and_replayed_offline(agentic, anthropic):
    _, env = anthropic([Reply(text="Counting.", tool_uses=[_use(COUNT_CODE)]), Reply(text="Two.")])
    recorded = agentic.run("--record", "run.json", "ask", "--text", "a b", **env)
    assert recorded.returncode == 0, recorded.stderr
    replayed = agentic.run("--replay", "run.json", "ask", "--text", "a b")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout == "Two.\n"


def test_without_the_sdk_the_run_names_the_extra(agentic, anthropic, monkeypatch):
    _, env = anthropic([Reply(text="never")])
    monkeypatch.setitem(sys.modules, "anthropic", None)
    result = agentic.run("ask", **env)
    assert result.returncode == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert line.endswith("needs the Anthropic SDK: pip install 'agentapps[anthropic]'.")


def test_one_markdown_skill_runs_on_all_three_providers(agentic, anthropic, aws):
    from tests.fakes.bedrock import Reply as BedrockReply
    from tests.fakes.openai import FakeOpenAI
    from tests.fakes.openai import Reply as OpenAIReply

    claude, env = anthropic([Reply(tool_uses=[_use(COUNT_CODE)]), Reply(text="3 words (Anthropic).")],
                            model="{}")
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n---\n")
    _, aws_env = aws([BedrockReply(tool_uses=[{"toolUseId": "t1", "name": "invoke",
                                                                 "input": {"code": COUNT_CODE}}]), BedrockReply(text="3 words (Bedrock).")])
    gpt = FakeOpenAI([OpenAIReply(tool_calls=[{"id": "c1", "name": "invoke", "arguments": {"code": COUNT_CODE}}]),
                      OpenAIReply(text="3 words (OpenAI).")], key="sk-test-key-000000000").start()
    try:
        env.update(aws_env, OPENAI_BASE_URL=gpt.base_url, OPENAI_API_KEY="sk-test-key-000000000")
        answers = {}
        for provider, model in (("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
                                ("openai", "gpt-4.1"), ("anthropic", SONNET)):
            result = agentic.run("--json", "--local", f"model.provider={provider}", "--model", model,
                                 "ask", "--text", "a b c", **env)
            assert result.returncode == 0, result.stderr
            out = json.loads(result.stdout)
            answers[provider] = (out["result"], out["turns"], out["steps"])
    finally:
        gpt.close()
    assert answers == {"bedrock": ("3 words (Bedrock).", 2, 1), "openai": ("3 words (OpenAI).", 2, 1),
                       "anthropic": ("3 words (Anthropic).", 2, 1)}
    assert len(claude.requests) == 2


@pytest.mark.parametrize(("cache", "system_cached", "last_cached"),
                         [("conversation", True, True), ("false", False, False)])
def test_model_cache_places_the_cache_breakpoints(agentic, anthropic, cache, system_cached, last_cached):
    fake, env = anthropic([Reply(text="Hi.")], model=f"{{provider: anthropic, id: {SONNET}, cache: {cache}}}")
    result = agentic.run("ask", **env)
    assert result.returncode == 0, result.stderr
    body = fake.requests[0].body
    assert ("cache_control" in body["system"][0]) is system_cached
    assert ("cache_control" in body["messages"][-1]["content"][-1]) is last_cached


def test_a_prompt_longer_than_the_window_exits_4(agentic, anthropic):
    _, env = anthropic([Reply.error(400, "prompt is too long: 210000 tokens > 200000 maximum")])
    result = agentic.run("--json", "ask", **env)
    assert result.returncode == 4, result.stderr
    assert json.loads(result.stdout)["stop_reason"] == "context_window"


def test_check_refuses_a_temperature_above_1_on_anthropic(agentic, anthropic):
    anthropic([], model="{provider: anthropic, temperature: 1.5}")
    result = agentic.project.cli("check")
    assert "model.temperature must be a number from 0 to 1" in result.stdout + result.stderr


def test_a_gateway_that_needs_no_key_is_reached_without_one(agentic, anthropic):
    fake, env = anthropic([Reply(text="Gateway.")])
    fake.key = None
    result = agentic.run("ask", ANTHROPIC_BASE_URL=env["ANTHROPIC_BASE_URL"], ANTHROPIC_API_KEY="",
                         ANTHROPIC_AUTH_TOKEN="")
    assert result.returncode == 0, result.stderr
    headers = fake.requests[0].headers
    assert result.stdout == "Gateway.\n" and "x-api-key" not in headers and "authorization" not in headers


def test_a_skill_that_names_its_own_server_gets_no_key(agentic, anthropic):
    fake, env = anthropic([Reply(text="never")])
    anthropic([], model=f"{{provider: anthropic, id: {SONNET}, baseUrl: '{env['ANTHROPIC_BASE_URL']}'}}")
    result = agentic.run("ask", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL="")
    assert result.returncode == 2 and len(fake.requests) == 1
    headers = fake.requests[0].headers
    assert "x-api-key" not in headers and "authorization" not in headers
    assert "ANTHROPIC_API_KEY was not sent" in result.stderr and KEY not in result.stderr
