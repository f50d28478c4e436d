"""Session stores and settings: parsing, memory and file backends, rolling window, scrubbing, rendering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentapps.errors import ConfigError, StoreCorruptError, UsageError
from agentapps.secrets import Redactor
from agentapps.stores.sessions import (
    PREAMBLE,
    FileSessionStore,
    MemorySessionStore,
    SessionSettings,
    render_history,
    scrub,
    settings,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, None, id="absent"),
        pytest.param(False, None, id="switched-off"),
        pytest.param("args.sessionId", SessionSettings("args.sessionId"), id="shorthand"),
        pytest.param({"key": "args.teamId", "capture": ["$args", "$result"], "maxEntries": 100, "store": "file"},
                     SessionSettings("args.teamId", ("$args", "$result"), 100, "file"), id="full-form"),
        pytest.param({"key": "args.k", "capture": "$agent"}, SessionSettings("args.k", ("$agent",)),
                     id="capture-as-one-string"),
        pytest.param({"key": "args.k", "capture": ["args.message", "result.summary"]},
                     SessionSettings("args.k", ("args.message", "result.summary")), id="dotted-captures"),
    ],
)
def test_settings_accepts_shorthand_and_full_form(value, expected):
    assert settings(value, skill="s") == expected


@pytest.mark.parametrize(
    ("value", "match"),
    [
        pytest.param(True, "use a path like args.sessionId", id="bare-true"),
        pytest.param(["args.x"], "use a path like", id="a-list"),
        pytest.param({"capture": ["$all"]}, "`key` must be a path", id="no-key"),
        pytest.param({"key": "  "}, "`key` must be a path", id="blank-key"),
        pytest.param({"key": "args.k", "maxEntires": 3}, "unknown field 'maxEntires'", id="typo-field"),
        pytest.param({"key": "args.k", "capture": ["$everything"]}, "'\\$everything'", id="bad-sentinel"),
        pytest.param({"key": "args.k", "capture": []}, "`capture` must be a list", id="empty-capture"),
        pytest.param({"key": "args.k", "maxEntries": 0}, "at least 1", id="zero-window"),
        pytest.param({"key": "args.k", "maxEntries": True}, "at least 1", id="boolean-window"),
        pytest.param({"key": "args.k", "store": "sqlite"}, "memory, file or redis", id="unknown-store"),
    ],
)
def test_settings_errors_name_the_skill_and_the_fix(value, match):
    with pytest.raises(ConfigError, match=match) as info:
        settings(value, skill="chat", file=Path("/p/chat.skill.md"))
    assert "Skill 'chat' has an invalid `session` setting" in str(info.value)
    assert info.value.file == "/p/chat.skill.md"


@pytest.fixture(params=["memory", "file"])
def store(request, tmp_path):
    if request.param == "memory":
        return MemorySessionStore({})
    return FileSessionStore(tmp_path / "sessions")


def test_store_load_append_keys_clear(store):
    assert store.load("a") == [] and store.all_keys() == []
    store.append("a", {"n": 1}, 50)
    store.append("a", {"n": 2}, 50)
    store.append("b/c d", {"n": 3}, 50)
    assert store.load("a") == [{"n": 1}, {"n": 2}]
    assert store.all_keys() == ["a", "b/c d"]
    assert store.clear("a") is True and store.clear("a") is False
    assert store.load("a") == [] and store.all_keys() == ["b/c d"]


def test_store_keeps_a_rolling_window(store):
    for n in range(7):
        store.append("k", {"n": n}, 3)
    assert [e["n"] for e in store.load("k")] == [4, 5, 6]


def test_store_readers_get_copies(store):
    store.append("k", {"list": [1]}, 5)
    store.load("k")[0]["list"].append(2)
    assert store.load("k") == [{"list": [1]}]


@pytest.mark.parametrize("key", ["", "a\nb", "x" * 300])
def test_store_refuses_unusable_keys(store, key):
    with pytest.raises(UsageError, match="Session key"):
        store.append(key, {}, 5)


def test_file_store_layout_is_one_encoded_json_file_per_key(tmp_path):
    root = tmp_path / "sessions"
    store = FileSessionStore(root)
    store.append("../escape/me", {"n": 1}, 5)
    store.append("k" * 240, {"n": 2}, 5)  # long keys get a hashed file name
    names = sorted(p.name for p in root.iterdir())
    assert names[:2] == ["%2E.%2Fescape%2Fme.json", ".lock"]
    assert names[2].startswith("k" * 100) and "~" in names[2] and len(names[2]) < 255
    assert all(p.parent == root for p in root.rglob("*"))
    data = json.loads((root / names[0]).read_text())
    assert data == {"key": "../escape/me", "entries": [{"n": 1}]}
    assert store.all_keys() == sorted(["../escape/me", "k" * 240])
    assert store.load("k" * 240) == [{"n": 2}]


def test_a_corrupt_session_file_is_reported_and_left_untouched(tmp_path):
    root = tmp_path / "sessions"
    store = FileSessionStore(root)
    store.append("k", {"n": 1}, 5)
    path = next(p for p in root.iterdir() if p.name == "k.json")
    path.write_text("{not json")
    with pytest.raises(StoreCorruptError, match="not valid JSON"):
        store.load("k")
    with pytest.raises(StoreCorruptError):
        store.append("k", {"n": 2}, 5)
    assert path.read_text() == "{not json"
    path.write_text('{"key": "other", "entries": []}')
    with pytest.raises(StoreCorruptError, match="not a session file"):
        store.load("k")



@pytest.mark.parametrize(("text", "why"), [
    ('{"key": "k", "entries": [' + "9" * 5000 + "]}", "is not JSON data agentapps writes"),
    ('{"key": "k", "entries": [NaN]}', "is not JSON data agentapps writes"),
    ('{"key": "k", "entries": [5]}', "is not a session file"),
    ('{"key": "k", "entries": [{"n": 1}, [1]]}', "is not a session file"),
], ids=["a 5,000-digit number", "NaN", "an entry that is a number", "an entry that is an array"])
def test_a_session_file_agentapps_could_not_have_written_is_reported(tmp_path, text, why):
    root = tmp_path / "sessions"
    store = FileSessionStore(root)
    store.append("k", {"n": 1}, 5)
    (root / "k.json").write_text(text)
    with pytest.raises(StoreCorruptError, match=why):
        store.load("k")
    assert (root / "k.json").read_text() == text

def test_survey_reports_each_unreadable_file_and_keeps_the_rest(tmp_path):
    root = tmp_path / "sessions"
    store = FileSessionStore(root)
    for key in ("a", "b", "c", "k" * 240):
        store.append(key, {"key": key}, 5)
    (root / "b.json").write_text("{not json")
    (root / "c.json").write_text('{"key": "other", "entries": []}')
    hashed = next(p for p in root.iterdir() if "~" in p.name)
    hashed.write_text("[]")
    found, problems = store.survey()
    assert found == [("a", [{"key": "a"}])]
    assert [(p.file, p.message.split(" (")[0].split(";")[0]) for p in problems] == [
        (str(root / "b.json"), "is not valid JSON"),
        (str(root / "c.json"), "is not a session file for key 'c'"),
        (str(hashed), "is not a session file"),
    ]
    assert problems[2].message.endswith("fix it by hand or remove the file.")
    assert store.all_keys() == ["a", "b", "c"]


def test_concurrent_appends_from_processes_lose_nothing(tmp_path):
    root = tmp_path / "sessions"
    worker = (
        "import sys\nfrom pathlib import Path\nfrom agentapps.stores.sessions import FileSessionStore\n"
        "store = FileSessionStore(Path(sys.argv[1]))\n"
        "for i in range(15):\n    store.append('shared', {'w': sys.argv[2], 'i': i}, 500)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", worker, str(root), str(w)]) for w in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    entries = FileSessionStore(root).load("shared")
    assert len(entries) == 60
    for w in range(4):
        assert [e["i"] for e in entries if e["w"] == str(w)] == list(range(15))
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_scrub_replaces_secrets_everywhere_and_cuts_long_strings():
    secrets = Redactor()
    secrets.register("TOKEN", "s3cr3t-long")
    secrets.register("SHORT", "s3cr3t")
    entry = {"args": {"q": "use s3cr3t-long and s3cr3t"}, "s3cr3t": ["x s3cr3t"], "n": 5, "long": "a" * 25_000}
    cleaned = scrub(entry, secrets)
    text = json.dumps(cleaned)
    assert "s3cr3t" not in text.replace("[redacted:", "")
    assert cleaned["args"]["q"] == "use [redacted:TOKEN] and [redacted:SHORT]"
    assert cleaned["[redacted:SHORT]"] == ["x [redacted:SHORT]"]
    assert cleaned["n"] == 5
    assert cleaned["long"].startswith("a" * 20_000) and cleaned["long"].endswith("[cut 5000 characters]")


def test_render_history_has_the_preamble_and_one_section_per_entry():
    text = render_history([
        {"skill": "chat", "at": "2025-01-01T00:00:00Z", "status": "ok", "args": {"q": "hi"}, "result": "hello",
         "agent": [{"type": "turn-start"}]},
        {"skill": "chat", "at": "2025-01-01T00:01:00Z", "status": "error", "error": "boom", "args": {"q": "x"}},
    ])
    assert text.startswith(PREAMBLE)
    assert "### 1. chat at 2025-01-01T00:00:00Z\nargs: {\"q\": \"hi\"}\nresult: hello\n" in text
    assert "### 2. chat at 2025-01-01T00:01:00Z (error)\nerror: boom\nargs: {\"q\": \"x\"}\n" in text
    assert "turn-start" not in text  # agent traces are stored, not shown to the model


@pytest.mark.parametrize("shape", ["deeply nested", "a folder"])
def test_a_file_that_cannot_be_a_session_is_reported_never_a_traceback(tmp_path, shape):
    root = tmp_path / "sessions"
    store = FileSessionStore(root)
    store.append("other", {"n": 1}, 5)
    path = root / "k.json"
    if shape == "a folder":
        path.mkdir()
    else:
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    for call in (lambda: store.load("k"), lambda: store.append("k", {"n": 2}, 5)):
        with pytest.raises(StoreCorruptError) as info:
            call()
        assert str(path) in str(info.value) and "left untouched" in str(info.value)
    found, problems = store.survey()
    assert [key for key, _ in found] == ["other"] and len(problems) == 1
