"""MCP servers through the real command line: output, redaction, listing, and no orphan on any exit."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.fakes.mcpkit import SECRET, assert_all_gone, fake_entry, pids, write_main
from tests.support.terminal import Terminal


def test_secrets_read_for_a_server_never_print(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    shown = project.cli("run", "fake-env", "--name", "TOKEN")
    assert shown.returncode == 0 and shown.stdout == "[redacted:MCP_TEST_SECRET]\n"
    crashed = project.cli("run", "--json", "fake-crash")
    assert crashed.returncode == 1
    assert "exited during 'crash' (exit code 3)" in crashed.stdout
    described = project.cli("describe", "--json", "main")
    for out in (shown, crashed, described):
        assert SECRET not in out.stdout + out.stderr
    # the declaration itself is shown as written
    assert json.loads(described.stdout)["metadata"]["mcp"]["fake"]["env"]["TOKEN"] == "${MCP_TEST_SECRET}"
    assert_all_gone(pidfile)


def test_an_error_result_is_exit_1_with_the_servers_message(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    failed = project.cli("run", "fake-fail")
    assert failed.returncode == 1
    assert failed.stderr.strip().endswith("MCP server 'fake' tool 'fail' failed: the widget is broken")


def test_list_says_it_starts_a_server_and_then_uses_the_cached_list(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)}, seed=False)
    first = project.cli("list", "--tag", "mcp")
    assert first.returncode == 0
    assert "mcp: starting server 'fake' to list its tools" in first.stderr
    assert "fake-echo" in first.stdout and " mcp " in first.stdout
    again = project.cli("list", "--tag", "mcp")
    assert again.stdout == first.stdout and "starting server" not in again.stderr
    assert len(pids(pidfile)) == 1  # the second listing read the cache
    which = project.cli("which", "fake-echo")
    assert which.stdout == "mcp://fake/echo  (mcp)\n"
    assert_all_gone(pidfile)


def test_agent_tool_discovery_documents_mcp_tools(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    project.write("ask.skill.md", """
        ---
        name: ask
        description: An agent that may use the fake server.
        allowed-tools: fake-echo fake-add
        metadata: { model: { agent: agent-scripted } }
        ---
        Use the tools.
    """)
    dry = project.cli("run", "--dry-run", "--json", "ask")
    system = json.loads(dry.stdout)["result"]["system"]
    assert "fake-echo" in system and "fake-add" in system and "Echo the text back." in system
    assert pids(pidfile) == []  # documenting tools needs their list, not the server


def _start(project, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentapps", *argv], cwd=project.root, env=project.env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(("how", "code"), [("SIGINT", 130), ("SIGTERM", 143), ("--timeout", 4)])
def test_no_server_outlives_an_interrupted_run(project, pidfile, how, code):
    write_main(project, {"fake": fake_entry(pidfile)})
    argv = ["run", "--timeout", "4", "fake-hang"] if how == "--timeout" else ["run", "fake-hang"]
    proc = _start(project, *argv)
    deadline = time.monotonic() + 20
    while not pids(pidfile) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the call is in flight: the server is blocked in it
    sent = time.monotonic()
    if how != "--timeout":
        proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == code, err
    if how != "--timeout":
        assert time.monotonic() - sent < 2.0
    assert_all_gone(pidfile, within=0.5)


def test_a_server_question_goes_to_the_terminal(project, pidfile):
    write_main(project, {"fake": fake_entry(pidfile)})
    term = Terminal(project, "run", "fake-ask-name", AGENTAPPS_TRUST_TIMEOUT="10")
    code = term.finish(answers=[("Answer?", "y\n"), ("name (string)", "Ada\n")], timeout=30)
    text = term.output
    assert code == 0, text
    assert "MCP server 'fake' asks: What is your name?" in text
    assert "hello Ada" in text
