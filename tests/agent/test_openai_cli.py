"""agent-openai end to end: the CLI and the real `openai` SDK against a loopback fake of the Chat
Completions API (tests/fakes/openai.py), streaming included."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai import FakeOpenAI, Reply

COUNT_CODE = "return await ctx.manager.invoke('wc', {text: memory.args.text})"
KEY = "sk-test-fake-key-0123456789"


@pytest.fixture
def openai(agentic) -> Iterator[Any]:
    """`openai(script, model=...)`: a fake server and the `ask` skill on agent-openai; returns
    (fake, env) for CLI runs aimed at it."""
    fakes: list[FakeOpenAI] = []
    agentic.code("wc", "len(args['text'].split())",
                 params={"type": "object", "properties": {"text": {"type": "string"}}})

    def start(script: list[Reply], model: str = "{provider: openai, id: gpt-4.1}") -> tuple[FakeOpenAI, dict[str, str]]:
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
        fake = FakeOpenAI(script, key=KEY).start()
        fakes.append(fake)
        return fake, {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY}

    yield start
    for fake in fakes:
        fake.close()


def _call(code: str, n: int = 1) -> dict[str, Any]:
    return {"id": f"call_{n}", "name": "invoke", "arguments": {"code": code}}


def test_streamed_text_a_tool_call_that_invokes_a_skill_usage_and_cost(agentic, openai):
    fake, env = openai([
        Reply(text="Let me count.", tool_calls=[_call(COUNT_CODE)],
              usage={"prompt_tokens": 100, "completion_tokens": 20}),
        Reply(text=["There are ", "three ", "words."],
              usage={"prompt_tokens": 150, "completion_tokens": 5, "cached_tokens": 100}),
    ])
    result = agentic.run("--json", "ask", "--text", "a b c", **env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "There are three words." and out["turns"] == 2
    assert out["usage"] == {"inputTokens": 150, "outputTokens": 25, "cacheReadInputTokens": 100,
                            "cacheWriteInputTokens": 0}
    # gpt-4.1: $2 input, $8 output, $0.50 cached input per million tokens
    assert out["cost"] == pytest.approx((150 * 2 + 25 * 8 + 100 * 0.5) / 1e6)
    assert out["models"]["gpt-4.1"]["outputTokens"] == 25
    assert "Let me count." in result.stderr and "There are three words." in result.stderr
    assert "ok invoke" in result.stderr
    first, second = fake.requests
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.body["model"] == "gpt-4.1" and first.body["stream"] is True
    assert first.body["stream_options"] == {"include_usage": True}
    system, user = first.body["messages"]
    assert system["role"] == "system" and "## wc" in system["content"] and user["role"] == "user"
    (tool,) = first.body["tools"]
    assert tool["function"]["name"] == "invoke" and tool["function"]["parameters"]["required"] == ["code"]
    asked, answer = second.body["messages"][-2:]
    assert asked["role"] == "assistant" and asked["content"] == "Let me count."
    assert asked["tool_calls"][0]["id"] == "call_1"
    assert json.loads(asked["tool_calls"][0]["function"]["arguments"]) == {"code": COUNT_CODE}
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_1"
    assert json.loads(answer["content"]) == {"ok": True, "result": 3}


def test_one_line_in_the_main_skill_or_local_switches_every_skill_to_openai(agentic, openai):
    fake, env = openai([Reply(text="One."), Reply(text="Two.")], model="{id: gpt-4.1}")
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n  model:\n"
                          "    provider: openai\n---\n")
    result = agentic.run("ask", "--text", "a", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "One.\n" and len(fake.requests) == 1
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n---\n")
    result = agentic.run("--local", "model.provider=openai", "ask", "--text", "a", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Two.\n" and len(fake.requests) == 2


def test_rate_limits_server_errors_and_a_broken_stream_are_retried(agentic, openai):
    fake, env = openai([Reply.error(429, "Rate limit reached", retry_after="0"),
                        Reply.error(500, "The server had an error"),
                        Reply(text="partial words that are cut off here", fail_after=3),
                        Reply(text="Done.")])
    result = agentic.run("ask", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n" and len(fake.requests) == 4
    assert "retrying (attempt 1" in result.stderr and "retrying (attempt 3" in result.stderr


def test_a_server_that_keeps_failing_is_one_line_after_max_attempts(agentic, openai):
    fake, env = openai([Reply.error(503, "overloaded")] * 2,
                       model="{provider: openai, id: gpt-4.1, maxAttempts: 2}")
    result = agentic.run("ask", **env)
    assert result.returncode == 1 and len(fake.requests) == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "HTTP 503" in line and "retried 1 time" in line and "Traceback" not in result.stderr


def test_a_bad_key_is_one_line_naming_the_variable_exit_2(agentic, openai):
    fake, env = openai([Reply(text="never")])
    result = agentic.run("ask", **{**env, "OPENAI_API_KEY": "sk-wrong-key-abcdefgh"})
    assert result.returncode == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "rejected the API key" in line and "OPENAI_API_KEY" in line
    assert "sk-wrong-key" not in result.stderr and "Traceback" not in result.stderr
    assert len(fake.requests) == 1  # a 401 is not retried


def test_no_key_for_openai_itself_is_refused_before_any_call(agentic, openai):
    openai([])
    result = agentic.run("ask", OPENAI_API_KEY="", OPENAI_BASE_URL="")
    assert result.returncode == 2
    assert "No OpenAI API key: set OPENAI_API_KEY" in result.stderr


def test_a_local_server_needs_no_key(agentic, openai):
    fake, env = openai([Reply(text="Local.")])
    fake.key = None
    result = agentic.run("ask", OPENAI_BASE_URL=env["OPENAI_BASE_URL"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Local.\n" and "authorization" not in fake.requests[0].headers


def test_the_fallback_model_takes_over_when_the_first_is_not_found(agentic, openai):
    fake, env = openai([Reply.error(404, "The model `gpt-missing` does not exist", code="model_not_found"),
                        Reply(text="From the fallback.")],
                       model="{provider: openai, id: gpt-missing, fallback: [gpt-4.1-mini]}")
    result = agentic.run("--json", "ask", **env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "From the fallback."
    assert [r.body["model"] for r in fake.requests] == ["gpt-missing", "gpt-4.1-mini"]
    assert list(out["models"]) == ["gpt-4.1-mini"]


def test_an_openai_run_is_recorded_and_replayed_offline(agentic, openai):
    _, env = openai([Reply(text="Counting.", tool_calls=[_call(COUNT_CODE)]), Reply(text="Two.")])
    recorded = agentic.run("--record", "run.json", "ask", "--text", "a b", **env)
    assert recorded.returncode == 0, recorded.stderr
    replayed = agentic.run("--replay", "run.json", "ask", "--text", "a b")  # no server, no key
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout == "Two.\n"
    assert json.loads((agentic.project.root / "run.json").read_text())["recorded"]["provider"] == "agent-openai"


def test_without_the_sdk_the_run_names_the_extra(agentic, openai, monkeypatch):
    _, env = openai([Reply(text="never")])
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` raises ImportError
    result = agentic.run("ask", **env)
    assert result.returncode == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert line.endswith("needs the OpenAI SDK: pip install 'agentapps[openai]'.")


def test_check_judges_the_openai_settings(agentic, openai):
    openai([], model="{provider: openai, temperature: 1.5, baseUrl: localhost:8000}")
    result = agentic.project.cli("check")
    assert result.returncode != 0
    assert "model.baseUrl must be an http(s) URL" in result.stdout + result.stderr
    assert "temperature" not in result.stdout + result.stderr  # 0 to 2 on OpenAI
    openai([], model="{provider: bedrock, temperature: 1.5}")
    result = agentic.project.cli("check")
    assert "model.temperature must be a number from 0 to 1" in result.stdout + result.stderr


FIVE_KB = "return 'turn {n} ' + 'lorem ipsum dolor sit amet '.repeat(185)"  # a result of about 5 kB


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_context_editing_keeps_a_long_run_in_a_small_window(agentic, openai, api):
    turns = [Reply(tool_calls=[_call(FIVE_KB.format(n=n), n)], usage=None) for n in range(1, 13)]
    fake, env = openai([*turns, Reply(text="All done.", usage=None)],
                       model=f'{{provider: openai, id: gpt-4.1, api: {api}, contextWindow: 6000, contextEdit: true}}')
    result = agentic.run("--json", "ask", **env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["result"] == "All done."
    sent = [json.dumps(r.body["messages" if api == "chat" else "input"]) for r in fake.requests if "tools" in r.body]
    assert any("cleared by context editing" in text for text in sent)
    assert fake.summaries >= 1 and fake.summary in sent[-1]
    assert max(len(text) for text in sent) < 6000 * 4


def test_without_context_editing_the_server_refusing_a_long_request_exits_4(agentic, openai):
    _, env = openai([Reply.error(400, "This model's maximum context length is 128000 tokens.",
                                 code="context_length_exceeded")])
    result = agentic.run("--json", "ask", **env)
    assert result.returncode == 4, result.stderr
    assert json.loads(result.stdout)["stop_reason"] == "context_window"
    assert "model.contextEdit: true" in result.stderr


def test_a_cost_budget_stops_the_run_before_the_turn_that_would_pass_it(agentic, openai):
    turns = [Reply(tool_calls=[_call("return 1", n)], usage={"prompt_tokens": 200_000, "completion_tokens": 1000})
             for n in range(1, 5)]
    fake, env = openai(turns, model="{provider: openai, id: gpt-4.1, maxCost: 1}")
    result = agentic.run("--json", "ask", **env)
    assert result.returncode == 4, result.stderr
    out = json.loads(result.stdout)
    assert out["stop_reason"] == "budget" and out["cost"] <= 1
    assert len(fake.requests) == 2  # $0.408 a turn: a third would pass $1


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_sigint_during_a_slow_stream_exits_130_quickly_and_closes_the_stream(agentic, openai):
    fake, env = openai([Reply(text=[f"word{n} " for n in range(300)])])
    fake.delay = 0.1
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "ask"], cwd=agentic.project.root,
                            env=agentic.project.env(**env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not fake.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.requests, "the CLI never called the model"
        time.sleep(0.5)  # mid-stream
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert took < 2.0 and stdout == "" and "Interrupted" in stderr and "Traceback" not in stderr
    deadline = time.monotonic() + 3
    while not fake.requests[0].aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake.requests[0].aborted  # the stream was closed, not left running


def test_api_key_env_names_only_an_api_key_variable(agentic, openai):
    fake, env = openai([Reply(text="OpenRouter.")])
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n"
                          "  model: {apiKeyEnv: OPENROUTER_API_KEY}\n---\n")
    result = agentic.run("ask", OPENAI_BASE_URL=env["OPENAI_BASE_URL"], OPENROUTER_API_KEY=KEY)
    assert result.returncode == 0, result.stderr
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n---\n")
    openai([], model="{provider: openai, id: gpt-4.1, apiKeyEnv: GITHUB_TOKEN}")
    result = agentic.run("ask", OPENAI_BASE_URL=env["OPENAI_BASE_URL"], GITHUB_TOKEN="ghp_secret_value")
    assert result.returncode == 2
    assert "model.apiKeyEnv must name an environment variable ending in _API_KEY" in result.stderr
    assert "ghp_secret_value" not in result.stderr and len(fake.requests) == 1


@pytest.mark.parametrize("url", ["vendor", "project"])
def test_a_skill_cannot_pick_which_of_the_users_keys_is_sent(agentic, openai, url):
    # a skill (a copied folder, an installed package) naming another vendor's variable must not send
    # that key to OpenAI, or to the gateway the user pointed OPENAI_BASE_URL at: the project names it
    fake, env = openai([Reply(text="sent")], model="{provider: openai, id: gpt-4.1, apiKeyEnv: ANTHROPIC_API_KEY}")
    where = {"OPENAI_BASE_URL": env["OPENAI_BASE_URL"]} if url == "project" else {}
    other = "sk-ant-canary-not-for-openai"
    result = agentic.run("ask", ANTHROPIC_API_KEY=other, OPENAI_API_KEY=KEY, **where)
    assert result.returncode == 2, result.stderr  # refused before any request leaves
    line = result.stderr.strip().splitlines()[-1]  # (after the agent's header lines)
    assert "ANTHROPIC_API_KEY was not sent: a skill's own model.apiKeyEnv names it" in line
    assert fake.requests == []
    assert other not in result.stderr and all(other not in str(r.headers) for r in fake.requests)


RESPONSES = "{provider: openai, id: gpt-4.1, api: responses}"


def test_the_responses_api_streams_a_tool_round_trip_with_usage_and_cost(agentic, openai):
    fake, env = openai([
        Reply(text="Let me count.", tool_calls=[_call(COUNT_CODE)],
              usage={"prompt_tokens": 100, "completion_tokens": 20}),
        Reply(text=["There are ", "three ", "words."],
              usage={"prompt_tokens": 150, "completion_tokens": 5, "cached_tokens": 100}),
    ], model=RESPONSES)
    result = agentic.run("--json", "ask", "--text", "a b c", **env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "There are three words." and out["turns"] == 2
    assert out["usage"] == {"inputTokens": 150, "outputTokens": 25, "cacheReadInputTokens": 100,
                            "cacheWriteInputTokens": 0}
    assert out["cost"] == pytest.approx((150 * 2 + 25 * 8 + 100 * 0.5) / 1e6)
    assert "There are three words." in result.stderr and "ok invoke" in result.stderr
    first, second = fake.requests
    assert first.path == "/v1/responses" and first.body["store"] is False and first.body["stream"] is True
    assert "## wc" in first.body["instructions"] and first.body["max_output_tokens"] == 4096
    (tool,) = first.body["tools"]
    assert tool["type"] == "function" and tool["name"] == "invoke"
    said, asked, answer = second.body["input"][-3:]
    assert said == {"role": "assistant", "content": "Let me count."}
    assert asked["type"] == "function_call" and asked["call_id"] == "call_1"
    assert json.loads(asked["arguments"]) == {"code": COUNT_CODE}
    assert answer["type"] == "function_call_output" and answer["call_id"] == "call_1"
    assert json.loads(answer["output"]) == {"ok": True, "result": 3}


def test_the_responses_api_retries_rate_limits_error_events_and_broken_streams(agentic, openai):
    fake, env = openai([Reply.error(429, "Rate limit reached", retry_after="0"),
                        Reply(text="cut by an error event", fail_after=3, stream_error="server_error"),
                        Reply(text="cut by a dropped connection", fail_after=3),
                        Reply(text="Done.")], model=RESPONSES)
    result = agentic.run("ask", **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n" and len(fake.requests) == 4
    assert "retrying (attempt 3" in result.stderr


def test_model_api_is_chat_or_responses(agentic, openai):
    openai([], model="{provider: openai, api: completions}")
    result = agentic.project.cli("check")
    assert 'model.api must be "chat" (Chat Completions) or "responses"' in result.stdout + result.stderr


def test_the_key_goes_only_to_a_base_url_the_project_chose(agentic, openai):
    # a skill file (a copied folder, an installed package) that names its own server must not
    # receive the user's key: its calls go there without one, and the error says why
    fake, env = openai([Reply(text="never")])
    url = env["OPENAI_BASE_URL"]
    openai([], model=f"{{provider: openai, id: gpt-4.1, baseUrl: '{url}'}}")
    result = agentic.run("ask", OPENAI_API_KEY=KEY, OPENAI_BASE_URL="")
    assert result.returncode == 2 and len(fake.requests) == 1
    assert "authorization" not in fake.requests[0].headers
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "OPENAI_API_KEY was not sent" in line and "main skill" in line and KEY not in result.stderr
    # the same URL chosen by the project (its main skill, or --local) carries the key
    fake.script = [Reply(text="Main."), Reply(text="Local.")]
    agentic.project.write("main.skill.md", f"---\nname: main\nmetadata:\n  role: main\n  model:\n"
                          f"    baseUrl: '{url}'\n---\n")
    result = agentic.run("ask", OPENAI_API_KEY=KEY, OPENAI_BASE_URL="")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Main.\n" and fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    agentic.project.write("main.skill.md", "---\nname: main\nmetadata:\n  role: main\n---\n")
    result = agentic.run("--local", f"model.baseUrl={url}", "ask", OPENAI_API_KEY=KEY, OPENAI_BASE_URL="")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Local.\n" and fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"
