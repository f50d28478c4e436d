"""What agent-openai sends: the conversation (kept in Converse's shape) as chat messages, and the
request settings that differ between OpenAI and the servers compatible with it."""

from __future__ import annotations

import json

import pytest

from agentapps.providers.endpoint import Endpoint
from agentapps.providers.openai_chat import OPENAI_URL, build_request, chat_messages


def test_tool_uses_and_results_become_tool_calls_and_tool_messages_in_order():
    messages = [
        {"role": "user", "content": [{"text": "Count the words."}]},
        {"role": "assistant", "content": [{"text": "Counting."},
                                          {"toolUse": {"toolUseId": "c1", "name": "invoke", "input": {"code": "1"}}},
                                          {"toolUse": {"toolUseId": "c2", "name": "invoke", "input": {"code": "2"}}}]},
        {"role": "user", "content": [
            {"toolResult": {"toolUseId": "c1", "content": [{"text": "one"}], "status": "success"}},
            {"toolResult": {"toolUseId": "c2", "content": [{"text": "Error: two"}], "status": "error"}},
            {"text": "Remember the limit."}]},
    ]
    sent = chat_messages("Be brief.", messages)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    calls = sent[2]["tool_calls"]
    assert [c["id"] for c in calls] == ["c1", "c2"] and json.loads(calls[1]["function"]["arguments"]) == {"code": "2"}
    assert sent[3] == {"role": "tool", "tool_call_id": "c1", "content": "one"}
    assert sent[4]["content"] == "Error: two" and sent[5] == {"role": "user", "content": "Remember the limit."}


def test_an_assistant_turn_with_only_tool_calls_has_no_text_content():
    sent = chat_messages("", [{"role": "assistant", "content": [
        {"toolUse": {"toolUseId": "c1", "name": "invoke", "input": {}}}]}])
    assert sent == [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "invoke", "arguments": "{}"}}]}]


@pytest.mark.parametrize(("base_url", "name"), [
    (OPENAI_URL, "max_completion_tokens"),
    ("https://my-resource.openai.azure.com/openai/v1", "max_completion_tokens"),
    ("https://openrouter.ai/api/v1", "max_completion_tokens"),
    ("http://localhost:11434/v1", "max_tokens"),
    ("http://127.0.0.1:8000/v1", "max_tokens"),
])
def test_the_reply_cap_has_the_name_the_server_knows(base_url, name):
    endpoint = Endpoint(base_url, "OPENAI_API_KEY", None, base_url == OPENAI_URL)
    request = build_request(endpoint=endpoint, model_id="m", system="s", messages=[], tools=[],
                            inference={"maxTokens": 100, "temperature": None})
    other = ({"max_tokens", "max_completion_tokens"} - {name}).pop()
    assert request[name] == 100 and other not in request
    assert "temperature" not in request and "tools" not in request


@pytest.mark.parametrize("base", [
    "https://api.openai.com.evil.example/v1",  # the vendor's name as a prefix of another host
    "https://api.openai.com@evil.example/v1",  # userinfo: the host is evil.example
    "https://evil.example/v1?u=https://api.openai.com/v1",
    "http://api.openai.com/v1",  # the vendor's host without TLS
])
def test_a_skills_own_base_url_that_only_looks_like_the_vendors_gets_no_key(base):
    from agentapps.providers.endpoint import Endpoint

    found = Endpoint.from_config({"baseUrl": base}, "s", default_url="https://api.openai.com/v1",
                                 url_env="OPENAI_BASE_URL", key_env="OPENAI_API_KEY",
                                 environ={"OPENAI_API_KEY": "sk-test-secret-value"})
    assert found.key is None and found.withheld and not found.official
