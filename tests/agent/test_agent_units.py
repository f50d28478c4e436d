"""The agent's pure parts: config and limits, truncation, discovery, user message, script files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from agentapps.agent.code import truncate
from agentapps.agent.config import DEFAULT_MODEL, Limits, confine, effective_config
from agentapps.agent.discovery import discover, is_constrained
from agentapps.agent.prompt import user_message
from agentapps.agent.script import Recorder, load_script
from agentapps.errors import ConfigError
from agentapps.tools.policy import Policy


@pytest.mark.parametrize("overrides, env, config, expected", [
    ({}, {}, {}, DEFAULT_MODEL),
    ({}, {}, {"id": "meta"}, "meta"),
    ({}, {"AGENTAPPS_MODEL": "env"}, {"id": "meta"}, "env"),
    ({"model": "flag"}, {"AGENTAPPS_MODEL": "env"}, {"id": "meta"}, "flag"),
])
def test_model_id_precedence(overrides, env, config, expected):
    assert effective_config(config, overrides, env)["id"] == expected


def test_replay_selects_the_scripted_provider_and_the_default_is_bedrock():
    assert effective_config({}, {}, {})["agent"] == "agent-bedrock"
    replay = effective_config({"agent": "mine"}, {"replay": "/x.json"}, {})
    assert replay["agent"] == "agent-scripted" and replay["script"] == "/x.json"


@pytest.mark.parametrize("config, field, expected", [
    ({}, "max_turns", 30), ({}, "max_steps", 30), ({}, "snippet_timeout", 30.0),
    ({}, "max_result_chars", 30_000), ({}, "loop_guard", 3), ({}, "max_reminders", 3),
    ({"persistent": True}, "max_turns", math.inf), ({"persistent": True}, "max_steps", math.inf),
    ({"persistent": True, "maxSteps": 5}, "max_steps", 5), ({"maxTurns": "Infinity"}, "max_turns", math.inf),
    ({"snippetTimeout": 0.5}, "snippet_timeout", 0.5), ({}, "deadline", 1800.0),
    ({"persistent": True}, "deadline", math.inf), ({"deadline": 60}, "deadline", 60),
])
def test_limits_from_config(config, field, expected):
    assert getattr(Limits.from_config(config, "s"), field) == expected


@pytest.mark.parametrize("config", [{"maxTurns": 0}, {"maxSteps": -1}, {"maxTurns": "many"},
                                    {"snippetTimeout": True}, {"loopGuard": 1}])
def test_bad_limits_are_configuration_errors_naming_the_key(config):
    with pytest.raises(ConfigError, match=f"model.{next(iter(config))}"):
        Limits.from_config(config, "s")


def test_sub_agents_inherit_provider_keys_and_cannot_loosen_limits():
    parent = {"agent": "agent-scripted", "script": "/s.json", "guard": "g", "maxSteps": 5}
    mine = confine({"agent": "shell", "script": "/etc/passwd", "maxSteps": 99, "maxTurns": 3,
                    "persistent": True, "temperature": 0.2}, parent, Limits.from_config(parent, "p"))
    assert mine["agent"] == "agent-scripted" and mine["script"] == "/s.json" and mine["guard"] == "g"
    assert mine["maxSteps"] == 5 and mine["maxTurns"] == 3 and mine["temperature"] == 0.2
    assert "persistent" not in mine


@pytest.mark.parametrize("asked", [{"maxTurns": 1000}, {"maxTurns": "Infinity"}, {"deadline": 1e9},
                                   {"snippetTimeout": 600}, {"maxResultChars": 10**7}, {}])
def test_a_sub_agent_never_outlives_the_parents_default_limits(asked):
    parent_limits = Limits.from_config({}, "parent")  # the parent set no limits: defaults bind
    mine = Limits.from_config(confine(asked, {}, parent_limits), "sub")
    assert mine.max_turns <= parent_limits.max_turns and mine.deadline <= parent_limits.deadline
    assert mine.snippet_timeout <= parent_limits.snippet_timeout
    assert mine.max_result_chars <= parent_limits.max_result_chars


@pytest.mark.parametrize("size", [10, 999, 1000, 1001, 5000, 100_000])
def test_truncation_keeps_head_and_tail_within_the_limit(size):
    text = "".join(chr(65 + i % 26) for i in range(size))
    out = truncate(text, 1000)
    assert len(out) <= 1000
    if size <= 1000:
        assert out == text
    else:
        assert out.startswith(text[:100]) and out.endswith(text[-100:]) and f"{size} characters" in out


def test_user_message_from_args_and_piped_input():
    assert user_message({}) == "Carry out the task."
    assert user_message({"a": 1}, "explicit") == "explicit"
    message = user_message({"path": "x.md", "input": "line one\nline two"})
    block = message.split("```json\n")[1].split("```")[0]
    assert json.loads(block) == {"path": "x.md"}
    assert "Input:\nline one\nline two" in message


def _tool(project, name, meta=None, allowed=None):
    fm = {"name": name, "description": f"{name} skill", "metadata": meta or {}}
    if allowed is not None:
        fm["allowed-tools"] = allowed
    project.write(f"{name}.skill.py", f"frontmatter = {fm!r}\n\ndef run(ctx, args):\n    return 1\n")


@pytest.fixture
def catalog(project):
    _tool(project, "file-read", {"params": {"type": "object", "properties": {"path": {"type": "string"}},
                                            "required": ["path"]}})
    _tool(project, "net")
    _tool(project, "vault", {"visibility": "hidden"})
    _tool(project, "timing", {"role": "middleware", "params": {"type": "object"}})
    _tool(project, "mine-provider", {"tags": ["agent-provider"]})
    return project.boot().globals.lookup


def _names(found):
    return [t["name"] for t in found.tools]


@pytest.mark.parametrize("allowed, mode, shown", [
    ("file-read vault", "constrained", ["file-read", "vault"]),
    ("file-r* net", "constrained", ["file-read", "net"]),
    ("*", "discovery", ["skill-describe", "skill-list"]),
    ("* vault", "discovery", ["skill-describe", "skill-list", "vault"]),
    (None, "discovery", ["skill-describe", "skill-list"]),
    ("net(mode=fast)", "constrained", ["net"]),
])
def test_discovery_modes(catalog, allowed, mode, shown):
    found = discover(catalog, [Policy.parse(allowed, "me")], allowed, "agent-bedrock")
    assert found.mode == mode and is_constrained(allowed) == (mode == "constrained")
    assert _names(found) == shown


def test_discovery_never_shows_agent_providers_or_the_skill_itself(catalog):
    found = discover(catalog, [Policy.parse("{agent,agent-*,mine-provider,me,net,timing}", "me")],
                     "{agent,agent-*,mine-provider,me,net,timing}", "agent-bedrock")
    assert _names(found) == ["net"] and [m["name"] for m in found.middleware] == ["timing"]


def test_discovery_respects_every_binding_policy_and_shows_constraints(catalog):
    callers = Policy.parse("file-read net(mode=fast)", "boss")
    found = discover(catalog, [callers, Policy.parse("file-read net vault", "me")],
                     "file-read net vault", "agent-bedrock")
    assert _names(found) == ["file-read", "net"]
    net = found.tools[1]
    assert net["constraints"] == [["net(mode=fast)"]] and net["signature"] == "{}"
    assert found.tools[0]["signature"] == "{path: string}"


def test_script_files_are_checked_with_clear_errors(tmp_path: Path):
    good = tmp_path / "s.json"
    good.write_text(json.dumps({"turns": [{"text": "a", "code": ["x", "y"], "usage": {"inputTokens": 1}},
                                          {"text": "b", "extra": "ignored"}]}))
    turns = load_script(good)
    assert turns[0].code == ("x", "y") and turns[1].text == "b"
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text("turns:\n  - text: hi\n    code: return 1\n")
    assert load_script(yaml_file)[0].code == ("return 1",)
    for body, why in [("[]", "a `turns` list"), ('{"turns": [1]}', "turn 1 must be an object"),
                      ('{"turns": [{"code": 3}]}', "turn 1 has a `code`"), ("{", "not valid JSON"),
                      ('{"turns": [{"delay": -1}]}', "`delay`")]:
        bad = tmp_path / "bad.json"
        bad.write_text(body)
        with pytest.raises(ConfigError, match=why):
            load_script(bad)
    with pytest.raises(ConfigError, match="Cannot read the script"):
        load_script(tmp_path / "missing.json")


def test_the_recorder_keeps_turns_in_the_order_they_started(tmp_path: Path):
    recorder = Recorder(tmp_path / "out" / "rec.json")
    parent = recorder.reserve()
    child = recorder.reserve()
    recorder.fill(child, "sub answer", [], {"inputTokens": 0, "outputTokens": 0})
    recorder.fill(parent, "", ["await agent()"], {"inputTokens": 3, "outputTokens": 1})
    recorder.write()
    body = json.loads((tmp_path / "out" / "rec.json").read_text())
    assert body["turns"] == [{"text": "", "code": "await agent()", "usage": {"inputTokens": 3, "outputTokens": 1}},
                             {"text": "sub answer"}]


def test_context_skills_are_reference_text_in_the_prompt_not_callable_entries(project):
    project.write("style/SKILL.md", "---\nname: style\ndescription: House style.\n---\nWrite in short sentences.\n")
    project.write("big.skill.md", "---\nname: big\nmetadata: {role: context}\n---\n" + "x" * 20_000 + "\n")
    project.write("task.skill.md", "---\nname: task\n---\nDo it.\n")
    lookup = project.boot().globals.lookup
    found = discover(lookup, [Policy.parse("style big task", "me")], "style big task", "agent-bedrock")
    assert _names(found) == ["task"]
    texts = {c["name"]: c["text"] for c in found.context}
    assert texts["style"] == "Write in short sentences."
    assert len(texts["big"]) < 8_100 and "12000 more characters not shown" in texts["big"]
    # discovery mode: only the named ones, like tools
    found = discover(lookup, [Policy.parse("* style", "me")], "* style", "agent-bedrock")
    assert [c["name"] for c in found.context] == ["style"]


def test_context_skills_reach_the_system_prompt(agentic):
    agentic.project.write("style/SKILL.md", "---\nname: style\ndescription: House style.\n---\nAlways answer in French.\n")
    agentic.skill("task", None, allowed="style")
    result = agentic.run("--dry-run", "--json", "task")
    assert result.returncode == 0, result.stderr
    system = json.loads(result.stdout)["result"]["system"]
    assert "# Reference" in system and "## style: House style." in system and "Always answer in French." in system


def test_a_sub_agent_cannot_point_its_model_calls_elsewhere():
    parent = {"agent": "agent-bedrock", "id": "model-a", "region": "us-east-1", "fallback": ["model-b"]}
    asked = {"endpointUrl": "http://127.0.0.1:9/", "region": "eu-west-3", "id": "model-x", "fallback": ["evil"],
             "agent": "agent-scripted", "profile": "other", "temperature": 0.1}
    mine = confine(asked, parent, Limits.from_config(parent, "p"))
    assert "endpointUrl" not in mine and "profile" not in mine
    assert (mine["region"], mine["id"], mine["fallback"], mine["agent"]) == ("us-east-1", "model-a", ["model-b"],
                                                                              "agent-bedrock")
    assert mine["temperature"] == 0.1  # how the model answers may still be chosen
