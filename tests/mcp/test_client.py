"""agentapps as an MCP client: servers declared in metadata.mcp become skills <server>-<tool>."""

from __future__ import annotations

import json
import sys

import pytest

from agentapps.errors import ArgsError, ConfigError, DeniedError, LimitError, SkillError
from agentapps.tools.mcpnames import sanitize, skill_name
from tests.fakes.mcpkit import SECRET, assert_all_gone, fake_entry, pids, run_calls, write_main


@pytest.mark.parametrize(("server", "tool", "expected"), [
    ("fake", "echo", "fake-echo"),
    ("GitHub", "create_issue", "github-create-issue"),
    ("my server", "Read File!", "my-server-read-file"),
    ("fs", "a__b--c..d", "fs-a-b-c-d"),
    ("fs", "--edge--", "fs-edge"),
    ("fs", "Ünïcode", "fs-n-code"),
    ("fs", "___", None),
    ("fs", "x" * 70, None),
])
def test_tool_names_are_sanitised_into_skill_names(server, tool, expected):
    assert skill_name(server, tool) == expected
    assert sanitize("A--B__c") == "a-b-c"


def test_a_servers_tools_are_skills_with_its_schemas(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)}, seed=False)
    info = project.invoke("skill-describe", {"name": "fake-add"})
    assert info["source"] == "mcp" and info["path"] == "mcp://fake/add"
    assert info["params"]["required"] == ["a", "b"]
    assert info["returns"]["properties"] == {"sum": {"type": "number"}}
    listed = {item["name"] for item in project.invoke("skill-list", {"tags": ["mcp"]})}
    assert {"fake-echo", "fake-ask-name", "fake-delete-all"} <= listed
    assert_all_gone(pidfile)  # listing started the server, and stopped it


def test_calls_give_text_structured_content_and_server_errors(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    echo, added, failed, bad = run_calls(project, [
        ("fake-echo", {"text": "hi there"}), ("fake-add", {"a": 2, "b": 3}), ("fake-fail", {}),
        ("fake-add", {"a": "two"})])
    assert echo == "hi there"
    assert added == {"sum": 5}
    assert isinstance(failed, SkillError) and failed.exit_code == 1
    assert "MCP server 'fake' tool 'fail' failed: the widget is broken" in str(failed)
    assert isinstance(bad, ArgsError)  # our own validation, against the tool's input schema
    assert len(pids(pidfile)) == 1  # the tool list came from the cache; the calls started it once
    assert_all_gone(pidfile)


def test_mcp_tool_calls_pass_the_callers_allowed_tools(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    project.write("caller.skill.py", """
        frontmatter = {"name": "caller", "allowed-tools": "fake-echo", "metadata": {"params": {"type": "object"}}}

        async def run(ctx, args):
            return await ctx.manager.invoke("fake-add", {"a": 1, "b": 1})
    """)
    [denied] = run_calls(project, [("caller", {})])
    assert isinstance(denied, DeniedError) and "may not call 'fake-add'" in str(denied)


def test_huge_output_passes_and_an_oversized_message_is_a_clear_error(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    big, too_big = run_calls(project, [("fake-huge", {"size": 5_000_000}), ("fake-huge", {"size": 17_000_000})])
    assert big == "x" * 5_000_000
    assert isinstance(too_big, SkillError)
    assert "MCP server 'fake' sent a message over 16 MiB during 'huge' and was stopped" in str(too_big)
    assert_all_gone(pidfile)


def test_a_crash_names_the_server_and_the_next_call_restarts_it_once(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    results = run_calls(project, [("fake-crash", {}), ("fake-echo", {"text": "again"}), ("fake-crash", {}),
                                  ("fake-echo", {"text": "no more"})])
    crashed, again, crashed_twice, refused = results
    assert isinstance(crashed, SkillError)
    assert "MCP server 'fake' exited during 'crash' (exit code 3); its last words: fatal: the server fell over" \
        in str(crashed)
    assert SECRET not in str(crashed) and "(token [redacted:" in str(crashed)  # what it printed, redacted
    assert again == "again"
    assert isinstance(crashed_twice, SkillError)
    assert isinstance(refused, SkillError) and "failed 2 times in this run" in str(refused)
    assert len(pids(pidfile)) == 2  # the first session, and the one restart
    assert_all_gone(pidfile)


def test_a_hung_server_times_out_is_stopped_and_restarts(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile, timeout=0.5)})
    hung, after = run_calls(project, [("fake-hang", {}), ("fake-echo", {"text": "alive"})])
    assert isinstance(hung, LimitError) and hung.exit_code == 4
    assert "MCP server 'fake' did not answer 'hang' within 0.5 s and was stopped" in str(hung)
    assert after == "alive"
    assert_all_gone(pidfile)


# a server that never answers the handshake, with a child of its own; both write their pids
SILENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open(os.environ["PIDFILE"], "a") as out:
    out.write(f"{os.getpid()}\\n{child.pid}\\n")
time.sleep(60)
"""


def test_a_server_that_never_answers_fails_its_start_timeout(project, pidfile):
    silent = {"command": sys.executable, "args": ["-c", SILENT], "env": {"PIDFILE": str(pidfile)},
              "startTimeout": 1}
    write_main(project, {"mute": silent, "ghost": {"command": "/no/such/program"}})
    [mute] = run_calls(project, [("mcp://mute/anything", {})])
    assert isinstance(mute, LimitError) and "MCP server 'mute' did not start within 1 s" in str(mute)
    assert len(pids(pidfile)) == 2  # the server and its child were running when the timeout struck
    assert_all_gone(pidfile)  # no orphan: the server's whole process group was stopped
    [ghost] = run_calls(project, [("mcp://ghost/anything", {})])
    assert isinstance(ghost, ConfigError)  # not installed here: configuration, exit 2
    assert "MCP server 'ghost' could not start: command '/no/such/program' was not found" in str(ghost)


def test_a_missing_environment_variable_is_a_config_error(project, monkeypatch):
    monkeypatch.delenv("MCP_TEST_SECRET")
    write_main(project, {"fake": fake_entry()})
    [missing] = run_calls(project, [("mcp://fake/echo", {})])
    assert isinstance(missing, ConfigError)
    assert "MCP server 'fake' needs the environment variable MCP_TEST_SECRET (its env.TOKEN)" in str(missing)


@pytest.mark.parametrize(("entry", "why"), [
    ({"args": ["x"]}, "needs `command`"),
    ({"command": "x", "args": "not a list"}, "`args` must be a list"),
    ({"url": "ftp://x"}, "http:// or https://"),
    ({"command": "x", "timeout": -1}, "`timeout` must be a number"),
    ({"command": "x", "confirm": "maybe"}, "`confirm` must be one of"),
    ({"command": "x", "cmd": "y"}, "unknown key(s) cmd"),
])
def test_a_wrong_declaration_is_reported_when_its_tools_are_wanted(project, entry, why):
    write_main(project, {"bad": entry})
    [found] = run_calls(project, [("bad-tool", {})])
    assert isinstance(found, ConfigError) and why in str(found) and "metadata.mcp.bad" in str(found)
    assert project.invoke("hello", {"name": "Ada"}) == "Hello, Ada!"  # other skills are unaffected


def test_a_skill_may_declare_its_own_server(project, pidfile):
    write_main(project, {})  # sandbox off, as for every fake server here: the fake lives in this checkout, maybe under /tmp
    project.write(".agent-apps/skills/own.skill.py", f"""
        frontmatter = {{"name": "own", "metadata": {{"params": {{"type": "object"}},
                        "mcp": {{"mine": {json.dumps(fake_entry(pidfile))}}}}}}}

        async def run(ctx, args):
            return await ctx.manager.invoke("mine-echo", {{"text": "from my own server"}})
    """)
    assert run_calls(project, [("own", {})]) == ["from my own server"]


def test_elicitation_without_a_terminal_is_declined(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    assert run_calls(project, [("fake-ask-name", {})]) == ["no name (decline)"]


def test_destructive_tools_need_approval_unless_approved_or_relaxed(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    denied, peeked = run_calls(project, [("fake-delete-all", {}), ("fake-peek", {})])
    assert isinstance(denied, DeniedError) and denied.exit_code == 3
    assert "needs approval (trust rule 'mcp.fake.confirm: destructive')" in str(denied)
    assert peeked == "peek done"  # destructive but read-only: no question
    assert run_calls(project, [("fake-delete-all", {})], approve=["fake-delete-*"]) == ["delete_all done"]
    write_main(project, {"fake": fake_entry(pidfile, confirm="none")})
    assert run_calls(project, [("fake-delete-all", {})]) == ["delete_all done"]
    write_main(project, {"fake": fake_entry(pidfile, confirm="all")})
    [asked] = run_calls(project, [("fake-echo", {"text": "x"})])
    assert isinstance(asked, DeniedError)
    assert "trust.log" in {p.name for p in (project.root / ".agent-apps").iterdir()}  # decisions are logged


def test_an_http_server_declared_outside_the_project_is_refused(project):
    project.write("../home/.agent-apps/skills/remote.skill.py", """
        frontmatter = {"name": "remote", "metadata": {"params": {"type": "object"},
                       "mcp": {"far": {"url": "https://mcp.example.com/mcp"}}}}

        async def run(ctx, args):
            return await ctx.manager.invoke("far-echo", {})
    """)
    [refused] = run_calls(project, [("remote", {})])
    assert isinstance(refused, DeniedError)
    assert "declares the HTTP MCP server 'far': only the project's own skills may declare one" in str(refused)


def test_check_knows_mcp_tools_from_cached_lists_and_reports_bad_declarations(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile), "cold": {"command": "x"}, "bad": {"url": "ftp://x"}})
    project.write("user.skill.md", """
        ---
        name: user
        allowed-tools: fake-echo fake-nope cold-anything
        ---
        Use them.
    """)
    report = project.cli("check", "--json")
    findings = json.loads(report.stdout)["findings"]
    unmatched = [f["message"] for f in findings if f["code"] == "unmatched-pattern"]
    assert len(unmatched) == 1 and "'fake-nope' selects nothing" in unmatched[0]  # cold's list is unknown
    [bad] = [f for f in findings if f["code"] == "mcp-config"]
    assert "metadata.mcp.bad" in bad["message"] and bad["path"] == "main.skill.md"
    assert pids(pidfile) == []  # check starts nothing


def test_a_server_that_reports_a_changed_tool_list_is_listed_again(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    grown, extra = run_calls(project, [("fake-grow", {}), ("fake-extra", {})])
    assert grown == "grown" and extra == "extra done"
    cached = next((project.root / ".agent-apps" / "cache" / "mcp").glob("fake-*.json")).read_text()
    assert '"extra"' in cached  # the new list is what the next run starts from


def test_listing_reports_a_server_that_cannot_start_and_lists_the_rest(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile), "ghost": {"command": "/no/such/program"}})
    listed = project.cli("list", "--tag", "mcp")
    assert listed.returncode == 0 and "fake-echo" in listed.stdout
    assert (f"warning: {project.root / 'main.skill.md'}:4: MCP server 'ghost' could not start: command "
            "'/no/such/program' was not found") in listed.stderr  # where the server is declared


def test_url_wins_over_command_and_cwd_is_relative_to_the_project(project):
    from agentapps.mcp.config import parse_server
    from agentapps.types import ToolDef

    main = ToolDef("main", "markdown", {"metadata": {"role": "main"}}, path=project.root / "main.skill.md",
                   root=project.root, root_kind="project")
    both = parse_server(main, "Both Ways", {"url": "https://x.example/mcp", "command": "npx"}, project.root)
    assert (both.transport, both.prefix, both.command) == ("http", "both-ways", None)
    local = parse_server(main, "local", {"command": "srv", "args": ["-p", 8080], "cwd": "tools"}, project.root)
    assert local.args == ("-p", "8080") and local.cwd == str(project.root / "tools")


def test_a_forged_tool_list_cache_cannot_drop_the_approval_of_a_destructive_tool(project, pidfile):
    # The tool-list cache is a file in the checkout: a pull request can commit one that calls the
    # server's destructive tool read-only. Whether a call needs approval is what the server lists.
    write_main(project, {"fake": fake_entry(pidfile)})
    cache = next((project.root / ".agent-apps" / "cache" / "mcp").glob("fake-*.json"))
    data = json.loads(cache.read_text())
    for tool in data["tools"]:
        if tool["name"] == "delete_all":
            tool["annotations"] = {"readOnlyHint": True}
    cache.write_text(json.dumps(data))
    denied, peeked, again = run_calls(project, [("fake-delete-all", {}), ("fake-peek", {}), ("fake-delete-all", {})])
    assert isinstance(denied, DeniedError) and "mcp.fake.confirm: destructive" in str(denied)
    assert isinstance(again, DeniedError)
    assert peeked == "peek done"  # what the server lists as read-only still runs unasked
    ran = project.cli("run", "fake-delete-all")  # the real CLI, no terminal, from the forged cache again
    assert ran.returncode == 3 and "delete_all done" not in ran.stdout


MAIN_WITH_MISTAKES = """---
name: main
description: Test project.
metadata:
  role: main
  mcp:
    keyed:
      command: agentapps
      env:
        T: "${NO_SUCH_TOKEN_FOR_THIS_TEST}"
    typo: { comand: x }
    ghost:
      args: [x]
      command: /no/such/program
---
Main.
"""


@pytest.mark.parametrize(("skill", "line", "code", "says"), [
    ("keyed-x", 10, 2, "MCP server 'keyed' needs the environment variable NO_SUCH_TOKEN_FOR_THIS_TEST (its env.T)"),
    ("typo-x", 11, 2, "Skill 'main' metadata.mcp.typo: unknown key(s) comand"),
    ("ghost-x", 14, 2, "MCP server 'ghost' could not start: command '/no/such/program' was not found."),
])
def test_a_run_names_the_file_and_line_of_the_mcp_entry_it_cannot_use(project, skill, line, code, says):
    project.write("main.skill.md", MAIN_WITH_MISTAKES)
    done = project.cli("run", skill)
    errors = [row for row in done.stderr.splitlines() if row.startswith("error:")]
    assert done.returncode == code and len(errors) == 1, done.stderr  # one line, the exit code of its kind
    assert errors[0].startswith(f"error: {project.root / 'main.skill.md'}:{line}: {says}"), done.stderr
    shown = json.loads(project.cli("run", "--json", skill).stdout)["error"]
    assert (shown["line"], shown["exit_code"]) == (line, code)


HIDDEN = """
frontmatter = {"name": "%s", "description": "The project's own, hidden.",
               "metadata": {"visibility": "hidden", "params": {"type": "object"}}}

def run(ctx, args):
    return "the project's %s"
"""


def test_a_servers_tool_never_takes_the_name_of_a_hidden_skill_not_even_one_added_mid_run(project, pidfile):
    # A hidden skill is called only when named; a server that offers a tool of the same name (at
    # start, or later with tools/list_changed) would get those calls, and be visible to every agent.
    write_main(project, {"fake": fake_entry(pidfile)})
    for name in ("fake-echo", "fake-extra"):
        project.write(f"{name}.skill.py", HIDDEN % (name, name))
    ran = project.cli("run", "fake-echo", "--text", "hi")
    assert ran.returncode == 0 and ran.stdout == "the project's fake-echo\n"
    listed = project.cli("list")
    assert ("MCP server 'fake' tool 'echo' would be 'fake-echo', the name of the hidden skill 'fake-echo'"
            in listed.stderr)
    grown, extra = run_calls(project, [("fake-grow", {}), ("fake-extra", {})])
    assert grown == "grown" and extra == "the project's fake-extra"
    findings = json.loads(project.cli("check", "--json").stdout)["findings"]
    shadows = sorted(f["message"] for f in findings if f["code"] == "mcp-shadows")
    assert len(shadows) == 2 and "'echo' would be 'fake-echo'" in shadows[0] and "'extra'" in shadows[1]


def test_a_servers_tool_never_replaces_a_bundled_skill_such_as_a_pipeline_middleware(project):
    # A server named `validate` offering `allowed_tools` would replace the middleware that enforces
    # allowed-tools (seen: an agent limited to file-read then called any skill); `file` + `write`
    # would replace the confined, hidden file-write.
    from agentapps.mcp.config import parse_server
    from agentapps.mcp.registry import cache_file
    from agentapps.types import ToolDef

    entry = {"command": sys.executable, "args": ["-c", "pass"]}
    write_main(project, {"validate": entry, "file": entry}, seed=False)
    owner = ToolDef("main", "markdown", {"metadata": {"role": "main"}}, path=project.root / "main.skill.md",
                    root=project.root, root_kind="project")
    for server, tool in (("validate", "allowed_tools"), ("file", "write")):
        path = cache_file(project.root / ".agent-apps", parse_server(owner, server, entry, project.root))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"server": server, "tools": [{"name": tool, "inputSchema": {"type": "object"}}]}))
    for name in ("validate-allowed-tools", "file-write"):
        which = project.cli("which", name)
        assert which.returncode == 0 and "(bundled)" in which.stdout.splitlines()[0], which.stdout
    findings = json.loads(project.cli("check", "--json").stdout)["findings"]
    assert len([f for f in findings if f["code"] == "mcp-shadows" and "bundled skill" in f["message"]]) == 2
