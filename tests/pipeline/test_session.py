"""The session middleware through real skills: capture, rolling window, placement, stores, secrets, CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from agentapps.errors import InterruptedError_, SkillError
from agentapps.stores.sessions import PREAMBLE, open_store

CANARY = "canary-51d0e2-do-not-store"

ECHO_AGENT = '''
frontmatter = {"name": "agent", "metadata": {"params": {"type": "object"}}}

def run(ctx, args):
    return args["prompt"]
'''

NOTE = '''
from agentapps.errors import InterruptedError_

frontmatter = {{"name": "note", "metadata": {{"session": {session}, "env": ["CANARY_SECRET"],
                                            "params": {{"type": "object"}}}}}}

def run(ctx, args):
    seen = ctx.locals.get("session")
    if args.get("fail"):
        raise RuntimeError("boom " + str(args.get("msg")))
    if args.get("interrupt"):
        raise InterruptedError_()
    ctx.locals.agent = {{"trace": [{{"type": "message", "text": args.get("msg")}}]}}
    return {{"summary": "got " + str(args.get("msg")), "seen": None if seen is None else len(seen)}}
'''

# Until default.skill.md switches `directives` on for every skill, each markdown test skill does.
CHAT = """---
name: chat
metadata:
  directives: true
  session: {session}
  params: {{type: object, properties: {{sessionId: {{type: string}}, q: {{type: string}}}}}}
---
{body}"""


def note(project, session):
    project.write("note.skill.py", NOTE.format(session=session))


def chat(project, session, body="You are helpful. Answer :arg[q]\n"):
    (project.root / "chat.skill.md").write_text(CHAT.format(session=session, body=body))


def stored(root, store, key):
    return open_store(root.globals, store).load(key)


def full(store, **extra):
    return json.dumps({"key": "args.sessionId", "store": store, **extra})


@pytest.fixture
def proj(project, monkeypatch):
    monkeypatch.setenv("CANARY_SECRET", CANARY)
    project.write("agent.skill.py", ECHO_AGENT)
    return project


@pytest.mark.parametrize("store", ["memory", "file"])
def test_history_accumulates_per_key_and_code_skills_read_it(proj, store):
    note(proj, full(store))
    root = proj.boot()
    seen = [proj.invoke("note", {"sessionId": "s1", "msg": m}, root)["seen"] for m in ("a", "b", "c")]
    assert seen == [0, 1, 2]
    assert proj.invoke("note", {"sessionId": "s2", "msg": "x"}, root)["seen"] == 0
    assert [e["args"]["msg"] for e in stored(root, store, "s1")] == ["a", "b", "c"]
    assert (proj.root / ".agent-apps" / "sessions" / "s1.json").exists() == (store == "file")


def test_shorthand_uses_the_memory_store(proj):
    note(proj, '"args.sessionId"')
    root = proj.boot()
    proj.invoke("note", {"sessionId": "s1", "msg": "a"}, root)
    assert len(stored(root, "memory", "s1")) == 1
    assert not (proj.root / ".agent-apps" / "sessions").exists()


@pytest.mark.parametrize("store", ["memory", "file"])
def test_a_key_that_resolves_to_nothing_skips_quietly(proj, store):
    note(proj, full(store))
    root = proj.boot()
    assert proj.invoke("note", {"msg": "a"}, root)["seen"] is None
    assert proj.invoke("note", {"sessionId": "", "msg": "a"}, root)["seen"] is None
    assert open_store(root.globals, store).all_keys() == []


def test_reading_an_absent_session_as_an_attribute_says_how_to_read_it(proj):
    proj.write("strict.skill.py", 'frontmatter = {"name": "strict", "metadata": {"session": "args.sessionId", '
               '"params": {"type": "object"}}}\n\ndef run(ctx, args):\n    return len(ctx.locals.session)\n')
    root = proj.boot()
    assert proj.invoke("strict", {"sessionId": "s1"}, root) == 0
    with pytest.raises(SkillError) as info:
        proj.invoke("strict", {}, root)
    assert ("AttributeError: ctx.locals has no 'session' in this call (read it with "
            "ctx.locals.get('session') where it may be unset)") in str(info.value)


@pytest.mark.parametrize(
    ("capture", "expected"),
    [
        pytest.param(["$args"], {"args": {"sessionId": "k", "msg": "m"}}, id="args"),
        pytest.param(["$result"], {"result": {"summary": "got m", "seen": 0}}, id="result"),
        pytest.param(["$agent"], {"agent": [{"type": "message", "text": "m"}]}, id="agent-trace"),
        pytest.param(["$all"], {"args": {"sessionId": "k", "msg": "m"}, "result": {"summary": "got m", "seen": 0},
                                "agent": [{"type": "message", "text": "m"}]}, id="all"),
        pytest.param(["args.msg", "result.summary", "locals.agent.trace[0].type"],
                     {"args.msg": "m", "result.summary": "got m", "locals.agent.trace[0].type": "message"},
                     id="dotted-paths"),
    ],
)
@pytest.mark.parametrize("store", ["memory", "file"])
def test_capture_selects_what_each_entry_keeps(proj, store, capture, expected):
    note(proj, full(store, capture=capture))
    root = proj.boot()
    proj.invoke("note", {"sessionId": "k", "msg": "m"}, root)
    [entry] = stored(root, store, "k")
    assert {k: entry.pop(k) for k in ("skill", "status")} == {"skill": "note", "status": "ok"}
    assert time.strptime(entry.pop("at"), "%Y-%m-%dT%H:%M:%SZ")
    assert entry == expected


@pytest.mark.parametrize("store", ["memory", "file"])
def test_the_window_keeps_the_latest_max_entries(proj, store):
    note(proj, full(store, maxEntries=3, capture=["args.msg"]))
    root = proj.boot()
    for n in range(5):
        proj.invoke("note", {"sessionId": "k", "msg": n}, root)
    assert [e["args.msg"] for e in stored(root, store, "k")] == [2, 3, 4]


@pytest.mark.parametrize("store", ["memory", "file"])
def test_failed_and_interrupted_calls_are_saved_and_marked(proj, store):
    note(proj, full(store, capture=["$args"]))
    root = proj.boot()
    with pytest.raises(SkillError, match="boom"):
        proj.invoke("note", {"sessionId": "k", "msg": "m", "fail": True}, root)
    with pytest.raises(InterruptedError_):
        proj.invoke("note", {"sessionId": "k", "interrupt": True}, root)
    failed, interrupted = stored(root, store, "k")
    assert failed["status"] == "error" and "Skill 'note' failed: RuntimeError: boom m" in failed["error"]
    assert interrupted["status"] == "interrupted" and interrupted["error"] == "Interrupted."


@pytest.mark.parametrize("store", ["memory", "file"])
def test_markdown_history_is_prepended_after_a_preamble(proj, store):
    chat(proj, full(store, capture=["$args"]))
    root = proj.boot()
    first = proj.invoke("chat", {"sessionId": "k", "q": "one"}, root)
    assert first == "You are helpful. Answer one\n"
    second = proj.invoke("chat", {"sessionId": "k", "q": "two"}, root)
    assert second.startswith(PREAMBLE)
    assert '### 1. chat at ' in second and 'args: {"sessionId": "k", "q": "one"}' in second
    assert second.endswith("\n---\n\nYou are helpful. Answer two\n")


@pytest.mark.parametrize("store", ["memory", "file"])
def test_session_history_directive_places_history_and_stops_the_prepend(proj, store):
    body = "You are helpful.\n\n:session-history[]\n\nAnswer :arg[q]\n"
    chat(proj, full(store, capture=["$args"]), body)
    root = proj.boot()
    assert proj.invoke("chat", {"sessionId": "k", "q": "one"}, root) == "You are helpful.\n\n\n\nAnswer one\n"
    second = proj.invoke("chat", {"sessionId": "k", "q": "two"}, root)
    assert second.startswith("You are helpful.\n\n" + PREAMBLE)
    assert second.count("## Session history") == 1
    assert '"q": "one"' in second and second.endswith("\nAnswer two\n")


def test_session_history_last_attribute_limits_entries(proj):
    chat(proj, full("memory", capture=["args.q"]), ":session-history[]{last=1}\n:arg[q]\n")
    root = proj.boot()
    for q in ("one", "two", "three"):
        out = proj.invoke("chat", {"sessionId": "k", "q": q}, root)
    assert "args.q: two" in out and "args.q: one" not in out


def test_history_text_from_arguments_is_never_expanded(proj):
    chat(proj, full("memory", capture=["$args"]), ":session-history[]\n:arg[q]\n")
    root = proj.boot()
    proj.invoke("chat", {"sessionId": "k", "q": ":env[CANARY_SECRET] :arg[q]"}, root)
    out = proj.invoke("chat", {"sessionId": "k", "q": "next"}, root)
    assert ":env[CANARY_SECRET] :arg[q]" in out and CANARY not in out


@pytest.mark.parametrize("store", ["memory", "file"])
def test_declared_secrets_never_reach_the_stored_session(proj, store):
    note(proj, full(store))
    root = proj.boot()
    proj.invoke("note", {"sessionId": "k", "msg": f"token={CANARY}"}, root)
    with pytest.raises(SkillError):
        proj.invoke("note", {"sessionId": "k", "msg": CANARY, "fail": True}, root)
    entries = stored(root, store, "k")
    text = json.dumps(entries)
    assert CANARY not in text and "[redacted:CANARY_SECRET]" in text
    if store == "file":
        assert all(CANARY not in p.read_text() for p in (proj.root / ".agent-apps" / "sessions").iterdir())


def test_cli_runs_share_a_file_session_and_never_store_the_canary(proj):
    chat(proj, full("file"), "Token :env[CANARY_SECRET]; question :arg[q]\n")
    text = (proj.root / "chat.skill.md").read_text().replace("  directives: true\n",
                                                             "  directives: true\n  env: [CANARY_SECRET]\n")
    (proj.root / "chat.skill.md").write_text(text)
    for q in ("one", "two"):
        result = proj.cli("run", "chat", "--session-id", "cli-1", "--q", q)
        assert result.returncode == 0, result.stderr
        assert CANARY not in result.stderr
    assert "question one" in result.stdout  # the second prompt carries the first call as history
    saved = (proj.root / ".agent-apps" / "sessions" / "cli-1.json").read_text()
    assert CANARY not in saved and "[redacted:CANARY_SECRET]" in saved
    assert [e["args"]["q"] for e in json.loads(saved)["entries"]] == ["one", "two"]


def test_sigint_saves_the_session_marked_interrupted(proj):
    proj.write("slow.skill.py", '''
        import asyncio
        from pathlib import Path

        frontmatter = {"name": "slow", "metadata": {"session": {"key": "args.sessionId", "store": "file"},
                                                    "params": {"type": "object", "properties": {
                                                        "sessionId": {"type": "string"}}}}}

        async def run(ctx, args):
            Path("started").write_text("yes")
            await asyncio.sleep(30)
        ''')
    proc = subprocess.Popen([sys.executable, "-m", "agentapps", "run", "slow", "--session-id", "int"],
                            cwd=proj.root, env=proj.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (proj.root / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    [entry] = json.loads((proj.root / ".agent-apps" / "sessions" / "int.json").read_text())["entries"]
    assert entry["status"] == "interrupted" and entry["args"] == {"sessionId": "int"}


def test_dry_run_never_saves_a_session(proj):
    note(proj, full("file"))
    result = proj.cli("run", "--dry-run", "note", "--session-id", "dry")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["skill"] == "note"
    assert not (proj.root / ".agent-apps" / "sessions").exists()


def _fill_file_store(proj):
    note(proj, full("file", capture=["args.msg"]))
    root = proj.boot()
    for key, msg in (("alpha", "a1"), ("alpha", "a2"), ("beta", "b1")):
        proj.invoke("note", {"sessionId": key, "msg": msg}, root)


def test_sessions_commands_list_show_clear_in_process(proj, capsys):
    from agentapps.cli import dispatch

    def run(*argv):
        code = dispatch(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    assert "No sessions in" in run("sessions", "list")[2]
    _fill_file_store(proj)
    code, out, _ = run("sessions", "list")
    assert code == 0 and [line.split()[:2] for line in out.splitlines()] == [["alpha", "2"], ["beta", "1"]]
    rows = json.loads(run("sessions", "list", "--json")[1])["sessions"]
    assert [(r["key"], r["entries"], r["skill"]) for r in rows] == [("alpha", 2, "note"), ("beta", 1, "note")]
    shown = json.loads(run("sessions", "show", "alpha")[1])
    assert [e["args.msg"] for e in shown["entries"]] == ["a1", "a2"]
    assert run("sessions", "clear", "alpha")[1] == "Cleared session 'alpha' (2 entries).\n"
    code, _, err = run("sessions", "show", "alpha")
    assert code == 2 and "No session 'alpha'" in err


def test_sessions_commands_in_a_real_process(proj):
    probe = proj.cli("sessions", "--help")
    if probe.returncode != 0:
        pytest.skip("`agentapps sessions` is not wired into agentapps/cli/app.py yet (register(app))")
    _fill_file_store(proj)
    listed = proj.cli("sessions", "list")
    assert listed.returncode == 0 and listed.stdout.startswith("alpha")
    shown = proj.cli("sessions", "show", "beta")
    assert json.loads(shown.stdout)["entries"][0]["args.msg"] == "b1"
    cleared = proj.cli("sessions", "clear", "beta")
    assert cleared.returncode == 0 and "Cleared session 'beta'" in cleared.stdout
    gone = proj.cli("sessions", "clear", "beta")
    assert gone.returncode == 2 and gone.stderr.startswith("error: No session 'beta'")


def test_sessions_list_shows_the_readable_sessions_and_warns_about_a_corrupt_file(proj):
    _fill_file_store(proj)
    folder = proj.root / ".agent-apps" / "sessions"
    (folder / "bad.json").write_text("{not json")
    listed = proj.cli("sessions", "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[:3] for line in listed.stdout.splitlines()] == [
        ["alpha", "2", "entries"], ["beta", "1", "entry"]]
    [warning] = listed.stderr.splitlines()
    assert warning.startswith(f"warning: {folder / 'bad.json'}: is not valid JSON (")
    assert warning.endswith("fix it by hand or remove it with 'agentapps sessions clear bad'.")
    as_json = proj.cli("sessions", "list", "--json")
    assert [r["key"] for r in json.loads(as_json.stdout)["sessions"]] == ["alpha", "beta"]
    assert as_json.stderr.splitlines() == [warning]


@pytest.mark.parametrize("text", ["{not json", '{"key": "other", "entries": []}'])
def test_sessions_clear_removes_a_corrupt_session_file(proj, text):
    _fill_file_store(proj)
    path = proj.root / ".agent-apps" / "sessions" / "alpha.json"
    path.write_text(text)
    shown = proj.cli("sessions", "show", "alpha")
    assert shown.returncode == 1
    assert shown.stderr.strip().endswith("remove it with 'agentapps sessions clear alpha'.")
    cleared = proj.cli("sessions", "clear", "alpha")
    assert (cleared.returncode, cleared.stdout) == (0, "Cleared session 'alpha' (its file was corrupt).\n")
    assert not path.exists()
    assert proj.cli("sessions", "list").stdout.split()[:3] == ["beta", "1", "entry"]


def test_sessions_show_accepts_json_and_counts_one_entry(proj):
    _fill_file_store(proj)
    shown = proj.cli("sessions", "show", "beta", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [e["args.msg"] for e in json.loads(shown.stdout)["entries"]] == ["b1"]
    assert proj.cli("sessions", "clear", "beta").stdout == "Cleared session 'beta' (1 entry).\n"
