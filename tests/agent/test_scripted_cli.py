"""Markdown skills run by the agent with the offline provider, through the real CLI."""

from __future__ import annotations

import json

WORDS = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
COUNT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}


def test_a_text_only_turn_is_the_result_and_stdout_holds_only_it(agentic):
    agentic.skill("hi", [{"text": "Hello from the model."}])
    result = agentic.run("hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello from the model.\n"
    assert "agent: hi" in result.stderr and "answered after 1 turn" in result.stderr
    first = agentic.requests()[0]
    assert "# Skills you can call" in first["system"] and "Do the task." in first["system"]
    assert first["input"] == ["Carry out the task."]


def test_code_calls_a_project_skill_and_memory_persists_across_turns(agentic):
    agentic.code("wc", '{"words": len(args["text"].split())}', params=WORDS)
    agentic.skill("count", [
        {"text": "Counting.", "code": "memory.r = await ctx.manager.invoke('wc', {text: memory.args.text}); return memory.r"},
        {"code": "memory.seen = (memory.seen ?? 0) + 1; return memory.r.words * 10"},
        {"text": "Done: 3 words."},
    ], allowed="wc", params=WORDS)
    result = agentic.run("count", "--text", "a b c")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done: 3 words.\n"
    assert agentic.tool_results() == [{"ok": True, "result": {"words": 3}}, {"ok": True, "result": 30}]
    assert json.loads(agentic.requests()[0]["input"][0].split("```json\n")[1].split("```")[0]) == {"text": "a b c"}
    assert "ok invoke" in result.stderr  # one plain progress line per tool call


def test_promise_all_runs_invokes_in_parallel_and_console_log_comes_back(agentic):
    agentic.code("slow", "import asyncio\nawait asyncio.sleep(0.3)\nreturn args['n'] * 2",
                 params={"type": "object", "properties": {"n": {"type": "integer"}}})
    agentic.skill("fan", [
        {"code": "const t = Date.now(); const r = await Promise.all([1, 2, 3, 4].map(n => "
                 "ctx.manager.invoke('slow', {n}))); console.log('took', Date.now() - t); return r"},
        {"text": "ok"},
    ])
    assert agentic.run("fan").returncode == 0
    (out,) = agentic.tool_results()
    assert out["result"] == [2, 4, 6, 8]
    assert int(out["console"].split()[1]) < 1000  # four 0.3 s calls at once, not one after another


def test_finish_with_a_valid_value_ends_the_run_with_that_value(agentic):
    agentic.skill("fin", [{"code": "ctx.manager.finish({count: 2})"}, {"text": "never played"}],
                  returns=COUNT)
    result = agentic.run("--json", "fin")
    out = json.loads(result.stdout)
    assert result.returncode == 0 and out["result"] == {"count": 2}
    assert out["stop_reason"] == "finished" and out["turns"] == 1 and out["steps"] == 1
    assert out["usage"] == {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0,
                            "cacheWriteInputTokens": 0}


def test_returns_are_enforced_with_reminders_then_a_clear_error(agentic):
    agentic.skill("strict", [
        {"code": "ctx.manager.finish({count: 'two'})"},
        {"text": "It is two."},
        {"text": "Really, two."},
        {"text": "Two!"},
    ], returns=COUNT)
    result = agentic.run("strict")
    assert result.returncode == 1
    assert "did not return a value matching `returns` after 3 reminders" in result.stderr
    refused = agentic.tool_results()[0]
    assert refused["ok"] is False and "does not match the returns schema" in refused["finishRefused"]
    reminders = agentic.messages()
    assert len(reminders) == 2 and all("ctx.manager.finish(value)" in m for m in reminders)
    assert "reminder 3 of 3" in reminders[-1]


def test_a_reminder_can_be_followed_by_a_valid_finish(agentic):
    agentic.skill("late", [{"text": "two"}, {"code": "ctx.manager.finish({count: 2})"}], returns=COUNT)
    result = agentic.run("late")
    assert result.returncode == 0 and json.loads(result.stdout) == {"count": 2}


def test_max_steps_refuses_further_code_then_exits_4(agentic):
    agentic.skill("busy", [{"code": ["return 1", "return 2", "return 3"]}, {"text": "done"}],
                  model={"maxSteps": 2})
    result = agentic.run("--json", "busy")
    assert result.returncode == 4
    out = json.loads(result.stdout)
    assert out["stop_reason"] == "max_steps" and out["steps"] == 2 and "maxSteps" in out["error"]["message"]
    # the third call came back as an error (shown as such), and the turn's end stopped the run
    assert result.stderr.count("ok invoke") == 2 and result.stderr.count("error invoke") == 1


def test_max_turns_exits_4(agentic):
    agentic.skill("chatty", [{"code": f"return {n}"} for n in range(5)], model={"maxTurns": 3})
    result = agentic.run("chatty")
    assert result.returncode == 4 and "used all 3 turns (model.maxTurns)" in result.stderr
    assert len(agentic.requests()) == 3
    assert json.loads(agentic.run("--json", "chatty").stdout)["turns"] == 3  # the refused turn is not counted


def test_the_loop_guard_warns_the_model_then_stops_the_run(agentic):
    agentic.skill("stuck", [{"code": "return 1"}] * 5)
    result = agentic.run("--json", "stuck")
    assert result.returncode == 4 and json.loads(result.stdout)["stop_reason"] == "loop_guard"
    results = agentic.tool_results()
    assert [r["ok"] for r in results] == [True, True, False]
    assert "same code 3 times in a row" in results[2]["error"]


def test_large_results_are_truncated_for_the_model_with_head_tail_and_size(agentic):
    agentic.skill("big", [{"code": "return 'A'.repeat(5000) + 'B'.repeat(5000)"}, {"text": "ok"}],
                  model={"maxResultChars": 1000})
    assert agentic.run("big").returncode == 0
    text = agentic.requests()[1]["input"][0]["text"]
    assert len(text) <= 1000 and "truncated" in text and "10026 characters" in text
    assert text.startswith('{"ok": true, "result": "AAA') and text.endswith('BBB"}')


def test_a_guard_skill_denies_tool_calls_through_the_tool_call_hook(agentic):
    agentic.code("no-secrets", "{'deny': 'secrets are off limits'} if 'secret' in (args.get('code') or '') else None")
    agentic.skill("guarded", [
        {"code": ["return 'secret'", "return 'fine'"]},
        {"text": "done"},
    ], model={"guard": "no-secrets"})
    result = agentic.run("guarded")
    assert result.returncode == 0, result.stderr
    assert agentic.tool_results() == [{"denied": "Denied: secrets are off limits"},
                                      {"ok": True, "result": "fine"}]


def test_a_model_error_fails_the_run_and_persistent_mode_retries_it(agentic):
    agentic.skill("flaky", [{"error": "model overloaded"}, {"text": "recovered"}])
    failed = agentic.run("flaky")
    assert failed.returncode == 1 and failed.stderr.count("model overloaded") == 1
    assert "error: Scripted model error: model overloaded" in failed.stderr
    agentic.skill("keeper", [
        {"error": "model overloaded"},
        {"text": "still working"},
        {"code": "ctx.manager.finish('all done')"},
    ], model={"persistent": True, "retryBase": 0.01})
    kept = agentic.run("--json", "keeper", input="go on\n")  # persistent: waits for input between turns
    out = json.loads(kept.stdout)
    assert kept.returncode == 0 and out["result"] == "all done" and out["turns"] == 3
    assert "go on" in agentic.messages()
    assert "model error, retrying in 0.01 s (attempt 1): model overloaded" in kept.stderr


def test_persistent_with_returns_is_a_configuration_error(agentic):
    agentic.skill("both", [{"text": "x"}], returns=COUNT, model={"persistent": True})
    result = agentic.run("both")
    assert result.returncode == 2 and "persistent" in result.stderr and "returns" in result.stderr


def test_record_then_replay_reproduces_the_result_offline(agentic):
    agentic.code("wc", '{"words": len(args["text"].split())}', params=WORDS)
    agentic.skill("count", [
        {"text": "Counting.", "code": "return await ctx.manager.invoke('wc', {text: memory.args.text})"},
        {"code": "ctx.manager.finish({count: 3})", "usage": {"inputTokens": 10, "outputTokens": 4}},
    ], allowed="wc", params=WORDS, returns=COUNT)
    recorded = agentic.run("--json", "--record", "run.json", "count", "--text", "a b c")
    assert recorded.returncode == 0, recorded.stderr
    script = json.loads((agentic.project.root / "run.json").read_text())
    assert [t.get("code") for t in script["turns"]] == [
        "return await ctx.manager.invoke('wc', {text: memory.args.text})", "ctx.manager.finish({count: 3})"]
    (agentic.project.root / "count.turns.json").unlink()  # the replay cannot use the original
    replayed = agentic.run("--json", "--replay", "run.json", "count", "--text", "a b c")
    first, second = json.loads(recorded.stdout), json.loads(replayed.stdout)
    assert replayed.returncode == 0, replayed.stderr
    for key in ("result", "usage", "turns", "steps", "stop_reason"):
        assert first[key] == second[key]
    assert second["usage"] == {"inputTokens": 10, "outputTokens": 4, "cacheReadInputTokens": 0,
                               "cacheWriteInputTokens": 0}


def test_dry_run_prints_the_system_prompt_with_tool_docs_and_calls_no_model(agentic):
    agentic.code("wc", '{"words": 0}', params={
        "type": "object", "properties": {"text": {"type": "string", "description": "Text to count."}},
        "required": ["text"]})
    agentic.skill("count", None, allowed="wc", params=WORDS, returns=COUNT, model={"agent": "agent-bedrock"})
    result = agentic.run("--dry-run", "count", "--text", "a b")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "## wc" in out and '`await ctx.manager.invoke("wc", {text: string})`' in out
    assert "- `text` (string, required): Text to count." in out
    assert '"required": [\n    "count"\n  ]' in out and "Do the task." in out
    assert "--- user message ---" in out and '"text": "a b"' in out
    assert agentic.requests() == [] and "agent:" not in result.stderr


def test_quiet_mode_shows_no_progress(agentic):
    agentic.skill("hi", [{"code": "return 1"}, {"text": "Hello."}])
    result = agentic.run("-q", "hi")
    assert result.returncode == 0 and result.stdout == "Hello.\n" and result.stderr == ""


def test_a_script_that_runs_out_says_what_to_do(agentic):
    agentic.skill("short", [{"code": "return 1"}])
    result = agentic.run("short")
    assert result.returncode == 1 and "has no turn left" in result.stderr and "--record" in result.stderr


def test_a_script_that_runs_out_after_a_failed_tool_call_names_the_failure(agentic):
    agentic.skill("short", [{"code": "throw new Error('the file is gone')"}])
    result = agentic.run("short")
    assert result.returncode == 1
    [line] = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line.endswith("the agent wanted another model reply; the last tool call failed: runtime: Error: the "
                         "file is gone (line 1). Record a fresh script with --record.")


def test_a_script_that_runs_out_after_a_success_names_no_failure(agentic):
    agentic.skill("short", [{"code": "throw new Error('boom')"}, {"code": "return 1"}])
    result = agentic.run("short")
    assert result.returncode == 1 and "has no turn left" in result.stderr
    assert "failed" not in result.stderr.splitlines()[-1]


def test_the_demo_on_a_missing_file_says_the_file_does_not_exist(project):
    result = project.cli("run", "demo-summarize", "--path", "nope.md")
    assert result.returncode == 1
    # the script's folder depends on where agentapps is installed (a checkout or site-packages)
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: Script ") and "/skills/examples/demo-summarize.turns.json " in last
    assert last.endswith(
        " has no turn left for 'demo-summarize' (turn 3); the agent wanted another model "
        "reply; the last 2 tool calls failed, the first (turn 1) with: invoke: InvokeError: UsageError: file-read: "
        "no such file 'nope.md' in the project. Record a fresh script with --record."
    )


def test_model_selection_from_flag_env_and_metadata_reaches_the_provider(agentic):
    agentic.skill("which", [{"text": "ok"}], model={"id": "meta-model"})
    assert "meta-model" in agentic.run("which").stderr
    assert "env-model" in agentic.run("which", AGENTAPPS_MODEL="env-model").stderr
    assert "flag-model" in agentic.run("--model", "flag-model", "which", AGENTAPPS_MODEL="env-model").stderr


def test_the_bundled_demo_runs_offline(agentic):
    agentic.project.write("notes.md", "# Title\n\nSome words here.\n\n## Part two\n\nMore.\n")
    result = agentic.run("demo-summarize", "--path", "notes.md")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "notes.md: 8 lines, 9 words.\n- Title\n- Part two\n"


def test_a_run_deadline_stops_a_slow_model(agentic):
    agentic.skill("slowpoke", [{"delay": 10, "text": "too late"}], model={"deadline": 0.5})
    result = agentic.run("--json", "slowpoke", timeout=8)
    assert result.returncode == 4 and "model.deadline" in result.stderr
    assert json.loads(result.stdout)["stop_reason"] == "deadline"


def test_a_long_prompt_reaches_the_provider(agentic):
    agentic.skill("long", [{"text": "read it"}], body="Read this. " + "word " * 20_000)
    result = agentic.run("long")
    assert result.returncode == 0, result.stderr
    assert len(agentic.requests()[0]["system"]) > 100_000


def test_record_never_replaces_a_recording_when_no_turn_happened(project):
    project.write("ask.skill.md", "---\nname: ask\n---\nSay hi.\n")
    keep = project.root / "good.json"
    keep.write_text('{"turns": [{"text": "hi"}]}\n')
    result = project.cli("run", "--record", "good.json", "ask", AWS_REGION="", AWS_DEFAULT_REGION="",
                         AWS_CONFIG_FILE="/dev/null")
    assert result.returncode != 0
    assert keep.read_text() == '{"turns": [{"text": "hi"}]}\n'
    same = project.cli("run", "--record", "good.json", "--replay", "good.json", "ask")
    assert same.returncode == 2 and "same file" in same.stderr



def test_replay_judges_the_settings_of_the_provider_the_skill_names(agentic):
    """--replay stands in for agent-bedrock: a setting the live run would refuse is refused (exit 2,
    before any turn), so a replayed CI run cannot pass while the real one fails."""
    agentic.project.write("run.json", json.dumps({"turns": [{"text": "done"}]}))
    agentic.skill("live", None, model={"agent": "agent-bedrock", "temperature": 5})
    refused = agentic.run("--replay", "run.json", "live")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: {agentic.project.root / 'live.skill.md'}:4: Skill 'live' model.temperature must be a "
        "number from 0 to 1, not 5.")
    assert agentic.requests() == []
    agentic.skill("live", None, model={"agent": "agent-bedrock", "temperature": 0.5})
    played = agentic.run("--replay", "run.json", "live")
    assert (played.returncode, played.stdout) == (0, "done\n"), played.stderr
