"""allowed-tools on agent code: denials reach the model as errors, refs stay bare, sub-agents narrow."""

from __future__ import annotations

import json

import pytest

from agentapps.tools.policy import Candidate, Policy

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}


def _errors(agentic):
    return [r.get("error", "") for r in agentic.tool_results() if not r.get("ok", True)]


def test_a_denied_call_comes_back_to_the_model_as_an_error_it_can_catch(agentic):
    agentic.code("wc", "len(args.get('text', '').split())", params=TEXT)
    agentic.code("net", "'net ran'")
    agentic.skill("reader", [
        {"code": "return await ctx.manager.invoke('net', {})"},
        {"code": "try { await ctx.manager.invoke('net', {}) } catch (e) { return 'caught: ' + e.message }"},
        {"code": "return await ctx.manager.invoke('wc', {text: 'a b'})"},
        {"text": "done"},
    ], allowed="wc")
    result = agentic.run("reader")
    assert result.returncode == 0, result.stderr
    first, second, third = agentic.tool_results()
    assert first["ok"] is False
    assert "DeniedError: Skill 'reader' may not call 'net': no pattern in allowed-tools 'wc'" in first["error"]
    assert second == {"ok": True, "result": "caught: DeniedError: Skill 'reader' may not call 'net': "
                      "no pattern in allowed-tools 'wc' matches 'net'."}
    assert third == {"ok": True, "result": 2}


def test_agent_code_may_only_name_bare_skills(agentic):
    agentic.code("wc", "1")
    refs = ["./wc.skill.py", "file:///etc/passwd", "inline://x", "/etc/passwd", "WC", "wc.skill.py"]
    agentic.skill("refs", [{"code": [f"return await ctx.manager.invoke({json.dumps(r)}, {{}})" for r in refs]},
                           {"text": "done"}])
    assert agentic.run("refs").returncode == 0
    errors = _errors(agentic)
    assert len(errors) == len(refs)
    assert all("not a bare skill name" in e or "bare name" in e for e in errors), errors


def test_hidden_skills_and_the_skill_itself_need_naming(agentic):
    agentic.code("vault", "'opened'", meta={"visibility": "hidden"})
    open_turns = [{"code": "return await ctx.manager.invoke('vault', {})"},
                  {"code": "return await ctx.manager.invoke('loose', {})"}, {"text": "done"}]
    agentic.skill("loose", open_turns)
    assert agentic.run("loose").returncode == 0
    hidden, itself = _errors(agentic)
    assert "'vault' is hidden" in hidden and "calling skill itself" in itself
    agentic.requests_path.unlink()
    agentic.skill("named", [{"code": "return await ctx.manager.invoke('vault', {})"}, {"text": "done"}],
                  allowed="vault")
    assert agentic.run("named").returncode == 0
    assert agentic.tool_results() == [{"ok": True, "result": "opened"}]


def test_a_markdown_helper_runs_its_agent_under_its_own_allowed_tools(agentic):
    agentic.code("wc", "1")
    agentic.code("net", "'net ran'")
    agentic.skill("helper", [{"code": "return await ctx.manager.invoke('wc', {})"},
                             {"code": "return await ctx.manager.invoke('net', {})"}, {"text": "done"}],
                  allowed="wc")
    agentic.project.write("boss.skill.py", '''
        frontmatter = {"name": "boss", "allowed-tools": "helper"}

        async def run(ctx, args):
            return await ctx.manager.invoke("helper", {})
        ''')
    result = agentic.run("boss")
    assert result.returncode == 0, result.stderr
    first, second = agentic.tool_results()
    assert first == {"ok": True, "result": 1}  # boss's grant does not reach into its helper
    assert "Skill 'helper' may not call 'net'" in second["error"]  # the helper's own grant does


def test_agent_code_cannot_call_its_own_callback_refs(agentic):
    agentic.skill("sneaky", [{"code": (
        "const all = await ctx.manager.invoke('skill-list', {includeHidden: true});"
        "const ref = all.find(s => s.name.startsWith('agent-invoke-')).name;"
        "return await ctx.manager.invoke(ref, {code: 'return 1'})")}, {"text": "done"}])
    assert agentic.run("sneaky").returncode == 0
    assert "may not call its own agent's callback refs" in _errors(agentic)[0]


def test_sub_agents_are_narrowed_by_allowed_tools_and_by_the_callers_specifier(agentic):
    agentic.code("wc", "len(args.get('text', '').split())", params=TEXT)
    agentic.code("other", "'other ran'")
    sub = "return await ctx.manager.invoke('agent', {prompt: 'Count.', allowedTools: 'wc', userMessage: 'go'})"
    agentic.skill("boss", [
        {"code": sub},                                                   # parent turn 1
        {"code": "return await ctx.manager.invoke('other', {})"},         # sub-agent turn 1: denied
        {"code": "return await ctx.manager.invoke('wc', {text: 'x y'})"},  # sub-agent turn 2
        {"text": "sub done"},                                            # sub-agent answer
        {"code": "return await ctx.manager.invoke('agent', {prompt: 'x', allowedTools: 'other'})"},
        {"code": "return await ctx.manager.invoke('other', {})"},         # parent may call other
        {"text": "done"},
    ], allowed="agent(allowedTools=wc) wc other")
    result = agentic.run("--json", "boss")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "done" and out["turns"] == 7 and out["stop_reason"] == "answered"
    results = agentic.tool_results()
    assert "Skill 'agent' may not call 'other'" in results[0]["error"]
    assert results[1] == {"ok": True, "result": 2}
    assert results[2] == {"ok": True, "result": "sub done"}
    assert "does not match 'wc' in 'agent(allowedTools=wc)'" in results[3]["error"]
    assert results[4] == {"ok": True, "result": "other ran"}
    assert [r["skill"] for r in agentic.requests()] == ["boss", "agent", "agent", "agent", "boss", "boss", "boss"]
    assert "  agent: agent" in result.stderr  # the sub-agent's progress is indented


def test_a_sub_agent_cannot_choose_its_provider_or_loosen_limits(agentic):
    agentic.code("wc", "1")
    sub = ("return await ctx.manager.invoke('agent', {prompt: 'x', userMessage: 'go', "
           "config: {agent: 'wc', maxSteps: 100, persistent: true}})")
    agentic.skill("parent", [{"code": sub}, {"code": ["return 1", "return 2", "return 3"]},
                             {"text": "done"}], allowed="agent wc", model={"maxSteps": 2})
    result = agentic.run("parent")
    assert result.returncode == 0, result.stderr
    # the sub-agent still played the script (provider kept) and kept the parent's maxSteps of 2;
    # its LimitError reached the parent's code as an error
    (failed,) = agentic.tool_results()
    assert failed["ok"] is False and "LimitError" in failed["error"] and "maxSteps" in failed["error"]
    assert [r["skill"] for r in agentic.requests()] == ["parent", "agent", "parent"]


GRANTS = ["wc", "wc other", "*", "w*", "other", "wc($deny) *"]


@pytest.mark.parametrize("parent", GRANTS)
@pytest.mark.parametrize("asked", ["wc", "other", "*", "wc other"])
def test_a_sub_agent_started_by_agent_code_never_exceeds_the_starting_agents_grant(agentic, parent, asked):
    agentic.code("wc", "'wc ran'")
    agentic.code("other", "'other ran'")
    sub = (f"return await ctx.manager.invoke('agent', {{prompt: 'x', userMessage: 'go', "
           f"allowedTools: {asked!r}}})")
    agentic.skill("boss", [
        {"code": sub},
        {"code": ["try { return await ctx.manager.invoke('wc', {}) } catch (e) { return 'denied: ' + e.message }",
                  "try { return await ctx.manager.invoke('other', {}) } catch (e) { return 'denied: ' + e.message }"]},
        {"text": "sub done"},
        {"text": "done"},
    ], allowed=f"agent {parent}")
    result = agentic.run("boss")
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    results = agentic.tool_results()
    sub_results = [r.get("result") for r in results[0:2]]  # the sub-agent's two snippets
    for callee, got in zip(["wc", "other"], sub_results, strict=True):
        c = Candidate(callee)
        may = (Policy.parse(parent, "boss").decide(c, {}).allowed
               and Policy.parse(asked, "boss").decide(c, {}).allowed)
        assert (got == f"{callee} ran") is may, (callee, got)


def test_a_sub_agent_never_outlives_a_parent_running_on_default_limits(agentic):
    sub = ("return await ctx.manager.invoke('agent', {prompt: 'x', userMessage: 'go', "
           "config: {maxTurns: 1000, maxSteps: 1000}})")
    # the sub-agent plays 31 code turns: more than the parent's default 30 turns and 30 steps
    turns = [{"code": sub}] + [{"code": f"return {n}"} for n in range(31)] + [{"text": "sub done"}]
    agentic.skill("parent", turns + [{"text": "done"}], allowed="agent")
    result = agentic.run("parent")
    # the parent's 30 turns are shared: it took one, its sub-agent the other 29, so neither may go on
    assert result.returncode == 4, result.stderr
    assert [r["skill"] for r in agentic.requests()].count("agent") == 29
    assert "agent: max_turns after 29 turn(s)" in result.stderr  # the sub-agent's own summary
    assert "error: The agent for 'parent' stopped before turn 2: model.maxTurns of 'parent' is 30" in result.stderr


def test_a_parent_and_its_sub_agents_share_max_steps(agentic):
    # the defect this pins: a parent with maxSteps: 3 and one sub-agent made 6 steps and exited 0
    agentic.code("wc", "1")
    sub = "return await ctx.manager.invoke('agent', {prompt: 'x', userMessage: 'go'})"
    calls = [{"code": f"return await ctx.manager.invoke('wc', {{n: {n}}})"} for n in range(3)]
    # the script: the parent starts the sub-agent, which tries three calls; then the parent tries one
    agentic.skill("parent", [{"code": sub}, *calls, {"code": "return await ctx.manager.invoke('wc', {n: 9})"},
                             {"text": "done"}], allowed="agent wc", model={"maxSteps": 3})
    result = agentic.run("parent")
    assert result.returncode == 4, result.stderr
    results = agentic.tool_results()
    # the parent's first call started the sub-agent, which got the other two of the parent's three
    assert results[:2] == [{"ok": True, "result": 1}] * 2 and len(results) == 3
    assert "LimitError" in results[2]["error"] and "maxSteps of 'parent'" in results[2]["error"]  # the sub-agent's end
    assert "error: The agent for 'parent' ran out of invoke calls: model.maxSteps of 'parent'" in result.stderr


def test_the_bare_name_rule_binds_agent_codes_own_calls_not_the_skills_they_run(agentic):
    agentic.code("helper", "'helper ran'")
    agentic.project.write("pathy.skill.py", '''
frontmatter = {"name": "pathy", "metadata": {"params": {"type": "object"}}}

async def run(ctx, args):
    return await ctx.manager.invoke("./helper.skill.py", {})
''')
    agentic.skill("user", [{"code": "return await ctx.manager.invoke('pathy', {})"}, {"text": "done"}],
                  allowed="pathy")
    assert agentic.project.cli("run", "pathy").stdout.strip() == "helper ran"
    result = agentic.run("user")
    assert result.returncode == 0, result.stderr
    assert agentic.tool_results() == [{"ok": True, "result": "helper ran"}]


def test_agent_code_cannot_pass_invoke_options_to_forge_a_scope(agentic):
    forged = ("return await ctx.manager.invoke('agent', {prompt: 'x', userMessage: 'go', "
              "$context: {nonlocals: {agent: {config: {maxTurns: 100000}}}}})")
    agentic.skill("parent", [{"code": forged}, {"text": "done"}], allowed="agent")
    result = agentic.run("parent")
    assert result.returncode == 0, result.stderr
    (refused,) = agentic.tool_results()
    assert refused["ok"] is False and "may not pass invoke options" in refused["error"]
